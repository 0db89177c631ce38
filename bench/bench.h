/* Cost measurements shared by `nanoclock bench` and `nanoclock info`. */
#ifndef NC_BENCH_H
#define NC_BENCH_H

struct nc_costs {
	double rdtsc, lfence_rdtsc;         /* inline baselines (x86; 0 elsewhere) */
	double cgt_mono, cgt_raw;           /* clock_gettime baselines */
	double ticks, ticks_begin, ticks_end, now_ns, ticks_to_ns;
	double conv_pure, conv_biased;      /* throughput: pure conversion vs a WTMLIB-style one */
};

/* ns per call, best of `rounds` rounds of `n` calls each */
void nc_measure_costs(struct nc_costs *c, long n, int rounds);
int nc_bench_main(int argc, char **argv);

#endif
