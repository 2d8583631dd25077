/*
 * Copyright (C) mt5-credit
 *
 * The monotonic clock, in milliseconds and microseconds: deadlines,
 * leases and durations are measured on it, never on the wall clock,
 * which an operator or NTP may step.  One definition for every program;
 * inline, so that a unit test or a fuzz target linking one file needs
 * nothing more.
 */

#ifndef MC_CLOCK_H
#define MC_CLOCK_H


#include <stdint.h>
#include <time.h>


static inline int64_t
mc_now_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


static inline int64_t
mc_now_us(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}


#endif /* MC_CLOCK_H */
