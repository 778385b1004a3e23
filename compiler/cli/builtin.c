/* builtin.c - trainyard-builtin: the runtime image's built-in trainer (trainyard-train execs it
 * when the job brings no program). Reads the SageMaker container contract, with every path
 * overridable by SM_* variables so it runs outside a container:
 *   SM_INPUT_CONFIG_DIR   /opt/ml/input/config        (hyperparameters.json)
 *   SM_CHANNEL_TRAIN      /opt/ml/input/data/train
 *   SM_CHANNEL_VALIDATION /opt/ml/input/data/validation (optional)
 *   SM_MODEL_DIR          /opt/ml/model
 *   SM_OUTPUT_DATA_DIR    /opt/ml/output/data         (compiler debug dump in compiler/)
 *   SM_OUTPUT_DIR         /opt/ml/output              (failure file)
 * Metrics go to stdout as `epoch=N train_loss=X val_accuracy=Y` lines; exit status 0 or 1. */
#include "tyc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *env_or(const char *name, const char *def)
{
    const char *v = getenv(name);
    return v && *v ? v : def;
}

static void line(void *ud, const char *l)
{
    (void)ud;
    printf("%s\n", l);
    fflush(stdout);
}

static void logline(void *ud, int level, const char *l)
{
    static const char *lv[] = {"error", "warn", "info", "debug"};
    (void)ud;
    fprintf(stderr, "ts=%ld level=%s %s\n", (long)time(NULL), lv[level & 3], l);
}

int main(int argc, char **argv)
{
    char hp[4096], dbg[4096], fail[4096];
    struct tyc_train_paths p;
    (void)argv;
    /* `train` is what SageMaker passes to a training image; nothing else is taken */
    if (argc > 2 || (argc == 2 && strcmp(argv[1], "train") != 0)) {
        fprintf(stderr,
                "usage: trainyard-builtin [train] (configured by /opt/ml and SM_* variables)\n");
        return 2;
    }
    tyc_set_log(logline, NULL, 2);
    snprintf(hp, sizeof(hp), "%s/hyperparameters.json",
             env_or("SM_INPUT_CONFIG_DIR", "/opt/ml/input/config"));
    snprintf(dbg, sizeof(dbg), "%s/compiler", env_or("SM_OUTPUT_DATA_DIR", "/opt/ml/output/data"));
    snprintf(fail, sizeof(fail), "%s/failure", env_or("SM_OUTPUT_DIR", "/opt/ml/output"));
    p.hyperparameters = hp;
    p.train_dir = env_or("SM_CHANNEL_TRAIN", "/opt/ml/input/data/train");
    p.val_dir = env_or("SM_CHANNEL_VALIDATION", "/opt/ml/input/data/validation");
    p.model_dir = env_or("SM_MODEL_DIR", "/opt/ml/model");
    p.debug_dir = dbg;
    p.failure_file = fail;
    return tyc_train_main(&p, NULL, line, NULL) == 0 ? 0 : 1;
}
