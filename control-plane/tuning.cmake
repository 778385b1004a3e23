# ty_tuning: hyperparameter tuning's pure part (tuning_strategy.c: spaces, scaling, Random, Grid,
# Bayesian (Gaussian process + expected improvement), Hyperband, the median stopping rule).
# The operations, the driver and CloudWatch metrics link into ty_server (server.cmake).
add_library(ty_tuning STATIC ${TY_CP_DIR}/tuning_strategy.c)
target_include_directories(ty_tuning PUBLIC ${TY_CP_DIR})
target_link_libraries(ty_tuning PUBLIC ty_core PkgConfig::JANSSON m)
