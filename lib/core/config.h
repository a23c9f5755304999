/* Environment-driven configuration shared by every communicator. */
#ifndef XC_CONFIG_H
#define XC_CONFIG_H

#include "xcoll.h"

/* Parses a duration in seconds ("2", "0.5"); -1 if malformed or negative. */
double xc_parse_seconds(const char *text);

#endif
