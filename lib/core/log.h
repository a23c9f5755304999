/* Logging: one line per event, prefixed with the process's rank.
 * The level comes from XCOLL_LOG=error|warn|info|debug|trace (default warn). */
#ifndef XC_LOG_H
#define XC_LOG_H

typedef enum {
    XC_LOG_ERROR = 0,
    XC_LOG_WARN,
    XC_LOG_INFO,
    XC_LOG_DEBUG,
    XC_LOG_TRACE
} xc_log_level_t;

/* The active level; cheap enough to test before formatting. */
extern int xc_log_level;

/* Reads XCOLL_LOG once; later calls cost a test (every call of the API
 * makes one). */
extern int xc_log_ready;
void xc_log_read_env(void);
static inline void xc_log_init(void)
{
    if (!xc_log_ready)
        xc_log_read_env();
}

/* The rank printed in the prefix: the launcher's world rank when it exports
 * one, else the rank in the first communicator created. */
void xc_log_set_rank(int rank);

void xc_log_write(xc_log_level_t level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define XC_LOG(level, ...)                                            \
    do {                                                              \
        if ((int)(level) <= xc_log_level)                             \
            xc_log_write((level), __FILE__, __LINE__, __VA_ARGS__);   \
    } while (0)

#define xc_error(...) XC_LOG(XC_LOG_ERROR, __VA_ARGS__)
#define xc_warn(...)  XC_LOG(XC_LOG_WARN, __VA_ARGS__)
#define xc_info(...)  XC_LOG(XC_LOG_INFO, __VA_ARGS__)
#define xc_debug(...) XC_LOG(XC_LOG_DEBUG, __VA_ARGS__)
#define xc_trace(...) XC_LOG(XC_LOG_TRACE, __VA_ARGS__)

#endif
