# test_volume: job volumes (volume.c) for real: image, ext4, loop device, mount, ENOSPC at the
# size, reservations, removal and reaping. Needs root and loop devices (skipped without them).
ty_unit_test(test_volume SOURCES ${TY_TESTS_DIR}/unit/test_volume.c LIBS ty_volume)
set_tests_properties(test_volume PROPERTIES TIMEOUT 120)
