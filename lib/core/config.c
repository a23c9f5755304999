/* xcoll_config_t defaults and the XCOLL_* environment. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xcoll.h"
#include "log.h"

static double parse_seconds(const char *text)
{
    char *end;
    double v;
    if (text == NULL || *text == '\0')
        return -1;
    errno = 0;
    v = strtod(text, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v) || v < 0)
        return -1;
    return v;
}

/* A 0/1 variable: *out keeps its value when the variable is unset. */
static xcoll_status_t env_flag(const char *name, int *out)
{
    const char *env = getenv(name);
    if (env == NULL || *env == '\0')
        return XCOLL_OK;
    if (strcmp(env, "1") != 0 && strcmp(env, "0") != 0) {
        xc_error("%s=%s is not 0 or 1", name, env);
        return XCOLL_ERR_INVALID_ARG;
    }
    *out = env[0] == '1';
    return XCOLL_OK;
}

xcoll_status_t xcoll_config_init(xcoll_config_t *cfg)
{
    const char *env;
    xc_log_init();
    if (cfg == NULL) {
        xc_error("xcoll_config_init: cfg is NULL");
        return XCOLL_ERR_INVALID_ARG;
    }
    /* every field has its default before any variable is read: a bad one
     * fails the call but leaves a usable configuration */
    cfg->timeout_s = 0;
    cfg->rules = NULL;
    cfg->rules_source = NULL;
    cfg->fallback = 0;
    cfg->memory = XCOLL_MEMORY_AUTO;
    cfg->progress_thread = 0;
    cfg->check = 0;
    if (env_flag("XCOLL_CHECK", &cfg->check) != XCOLL_OK ||
        env_flag("XCOLL_PROGRESS_THREAD", &cfg->progress_thread) != XCOLL_OK)
        return XCOLL_ERR_INVALID_ARG;
    env = getenv("XCOLL_TIMEOUT");
    if (env != NULL && *env != '\0') {
        double t = parse_seconds(env);
        if (t < 0) {
            xc_error("XCOLL_TIMEOUT=%s is not a number of seconds >= 0", env);
            return XCOLL_ERR_INVALID_ARG;
        }
        cfg->timeout_s = t;
    }
    env = getenv("XCOLL_MEMORY");
    if (env != NULL && *env != '\0') {
        if (strcmp(env, "auto") == 0)
            cfg->memory = XCOLL_MEMORY_AUTO;
        else if (strcmp(env, "host") == 0)
            cfg->memory = XCOLL_MEMORY_HOST;
        else if (strcmp(env, "cuda") == 0)
            cfg->memory = XCOLL_MEMORY_CUDA;
        else {
            xc_error("XCOLL_MEMORY=%s is not one of auto, host, cuda", env);
            return XCOLL_ERR_INVALID_ARG;
        }
    }
    return XCOLL_OK;
}
