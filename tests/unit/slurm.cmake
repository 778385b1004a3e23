# test_slurmrest: the slurmrestd client's pure parts on answers recorded from Slurm 22.05.8
# (tests/unit/data/slurm). The client against a live cluster is test_slurm_live (tests/slurm).
ty_unit_test(test_slurmrest SOURCES ${TY_TESTS_DIR}/unit/test_slurmrest.c LIBS ty_slurm)
target_compile_definitions(test_slurmrest PRIVATE
                           TY_SLURM_DATA="${CMAKE_SOURCE_DIR}/tests/unit/data/slurm")
# test_slurmmap: the Slurm executor's instance map, checked against recorded partitions and nodes.
ty_unit_test(test_slurmmap SOURCES ${TY_TESTS_DIR}/unit/test_slurmmap.c LIBS ty_slurmexec)
target_compile_definitions(test_slurmmap PRIVATE
                           TY_SLURM_DATA="${CMAKE_SOURCE_DIR}/tests/unit/data/slurm")
# test_slurmscript: the Slurm job of a training job: its name and its batch script.
ty_unit_test(test_slurmscript SOURCES ${TY_TESTS_DIR}/unit/test_slurmscript.c LIBS ty_slurmexec)
# test_slurmfate: what a Slurm job's state means for its training job, on recorded jobs and nodes;
# Slurm's host lists.
ty_unit_test(test_slurmfate SOURCES ${TY_TESTS_DIR}/unit/test_slurmfate.c LIBS ty_slurmexec)
target_compile_definitions(test_slurmfate PRIVATE
                           TY_SLURM_DATA="${CMAKE_SOURCE_DIR}/tests/unit/data/slurm")
# test_launchwire: what a per-node launcher and its executor say to each other.
ty_unit_test(test_launchwire SOURCES ${TY_TESTS_DIR}/unit/test_launchwire.c LIBS ty_launch)
# test_launchsrv: the executor's end of that wire, over HTTP on loopback.
ty_unit_test(test_launchsrv SOURCES ${TY_TESTS_DIR}/unit/test_launchsrv.c LIBS ty_launch PkgConfig::CURL)
# test_slurmjob: one attempt's submission to Slurm.
ty_unit_test(test_slurmjob SOURCES ${TY_TESTS_DIR}/unit/test_slurmjob.c LIBS ty_slurmexec)
