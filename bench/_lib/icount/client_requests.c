/* Callgrind's client requests, callable from Python through ctypes (bench/instruction_counts.py builds this). */
#include <valgrind/callgrind.h>

void attnkit_cg_zero(void) { CALLGRIND_ZERO_STATS; }
void attnkit_cg_dump(const char *name) { CALLGRIND_DUMP_STATS_AT(name); }
