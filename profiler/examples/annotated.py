# A SageMaker Profiler style script (smprof annotations); the docs/ screenshot comes from
#   PYTHONPATH=profiler/python build/bin/typrof run --interval 100 --out /tmp/prof -- \
#       /usr/bin/python3 profiler/examples/annotated.py && build/bin/typrof report /tmp/prof
import time, smprof
prof = smprof.SMProfiler.instance()
prof.start_profiling()
for step in range(12):
    with smprof.annotate("step"):
        with smprof.annotate("data_load"):
            time.sleep(0.02)
        with smprof.annotate("forward"):
            sum(i*i for i in range(60000))
        with smprof.annotate("backward"):
            sum(i*i for i in range(90000))
prof.stop_profiling()
