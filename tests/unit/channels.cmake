# test_channels: the pure parts of staging a job's data (channels.h) - shard split, key paths,
# ManifestFile parsing, gunzip while copying, sourcedir.tar.gz extraction and its rejections.
ty_unit_test(test_channels SOURCES ${TY_TESTS_DIR}/unit/test_channels.c LIBS ty_agent_core)
