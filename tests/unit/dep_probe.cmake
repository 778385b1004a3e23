# Runs one boundary probe of deps.cmake: compiles SRC (one #include of HEADER) with CC and the
# include folders listed in DIRS (those a dependent of LIB gets). EXPECT=allowed needs it to
# compile; EXPECT=forbidden needs it to fail on HEADER not being found (any other failure, such
# as a broken header, fails the test instead of passing it).
file(STRINGS ${DIRS} dirs)
set(flags "")
foreach(d ${dirs})
  list(APPEND flags "-I${d}")
endforeach()
execute_process(COMMAND ${CC} -std=gnu11 -fsyntax-only ${flags} ${SRC}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(EXPECT STREQUAL "allowed")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "dep_probe: #include \"${HEADER}\" should compile beside ${LIB}:\n${out}")
  endif()
elseif(rc EQUAL 0)
  message(FATAL_ERROR "dep_probe: #include \"${HEADER}\" compiled beside ${LIB}: the boundary is open")
elseif(NOT out MATCHES "${HEADER}: No such file|'${HEADER}' file not found")
  message(FATAL_ERROR "dep_probe: beside ${LIB} the probe failed for another reason:\n${out}")
else()
  message(STATUS "dep_probe: #include \"${HEADER}\" refused beside ${LIB}, as it should be")
endif()
