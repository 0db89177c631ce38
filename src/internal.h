/* SPDX-License-Identifier: MIT */
/* The tests' view of the library's internals: every internal header, for
 * the test programs and fuzzers that drive the library's hidden functions
 * (they link the static archive).  The library's own files never include
 * it: each includes the headers of what it uses, down the layers of
 * docs/architecture.md (scripts/check-layers enforces them). */
#ifndef NC_INTERNAL_H
#define NC_INTERNAL_H

#include "base/compiler.h"
#include "base/config.h"
#include "base/debug.h"
#include "base/latch.h"
#include "base/lock.h"
#include "base/log.h"
#include "base/refclock.h"
#include "counter/counter.h"
#include "rate/rate.h"
#include "shared/shared.h"
#include "clock/events.h"
#include "clock/line.h"
#include "clock/now.h"
#include "clock/timeline.h"
#include "clock/upkeep.h"
#include "clock/wall.h"
#include "utc/utc.h"
#include "sync/sync_internal.h"
#include "init.h"

#endif
