/*
 * Copyright (C) mt5-credit
 *
 * Logging for the batch programs: one line per event on stderr, with a
 * UTC timestamp, the level and, where a line concerns a credit, its id
 * and reference, so a credit can be followed with grep.
 */


#ifndef MC_LOG_H
#define MC_LOG_H


#include <stdint.h>


typedef enum {
    MC_LOG_DEBUG = 0,
    MC_LOG_INFO,
    MC_LOG_WARN,
    MC_LOG_ERROR,
    MC_LOG_ALERT          /* a person must look */
} mc_log_level_e;


void mc_log_set_level(mc_log_level_e level);
int mc_log_parse_level(const char *name, mc_log_level_e *level);
void mc_log_set_name(const char *name);
/* 1: one JSON object a line (log_format = json); 0: text */
void mc_log_set_json(int json);

void mc_log(mc_log_level_e level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));


#endif /* MC_LOG_H */
