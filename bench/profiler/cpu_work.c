/*
 * cpu_work.c - the CPU workload of the typrof overhead benchmark: STEPS steps of fixed
 * floating-point work (about 1 ms each on a 2020s core). With ANNOTATE=1 it opens libtyprof
 * ($TYPROF_LIB, set by `typrof run`) with dlopen and wraps every step in typrof_step_begin/end
 * plus one range, so the benchmark also prices the annotation path.
 * usage: cpu_work STEPS [ANNOTATE]
 */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    long steps = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
    int annotate = argc > 2 && (int)strtol(argv[2], NULL, 10);
    void (*step_begin)(int64_t) = NULL, (*step_end)(int64_t) = NULL;
    uint64_t (*rb)(const char *) = NULL;
    void (*re)(uint64_t) = NULL;
    if (annotate && getenv("TYPROF_LIB")) {
        void *h = dlopen(getenv("TYPROF_LIB"), RTLD_NOW);
        if (h) {
            *(void **)&step_begin = dlsym(h, "typrof_step_begin");
            *(void **)&step_end = dlsym(h, "typrof_step_end");
            *(void **)&rb = dlsym(h, "typrof_range_begin");
            *(void **)&re = dlsym(h, "typrof_range_end");
        }
    }
    volatile double acc = 0;
    for (long s = 0; s < steps; s++) {
        uint64_t r = 0;
        if (step_begin) {
            step_begin(s);
            r = rb("compute");
        }
        double x = (double)s;
        for (int i = 0; i < 40000; i++)
            x = sin(x) * 0.5 + cos(x * 0.25) + 1e-9 * i;
        acc += x;
        if (step_end) {
            re(r);
            step_end(s);
        }
    }
    printf("%f\n", (double)acc);
    return 0;
}
