# One CTest entry per CAF_TEST, named <prefix>.<suite>.<test name with
# underscores>, each running only its own test through CAF's runner. The
# names are read from the sources when CMake configures (and again whenever
# one of them changes): each file sets its suite with `#define CAF_SUITE`.
function(hb_add_caf_tests target prefix)
  foreach(source IN LISTS ARGN)
    get_filename_component(source ${source} ABSOLUTE)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${source})
    file(STRINGS ${source} suite_line REGEX "^#define CAF_SUITE ")
    string(REGEX REPLACE "^#define CAF_SUITE ([A-Za-z0-9_]+).*" "\\1" suite "${suite_line}")
    if(NOT suite)
      message(FATAL_ERROR "${source}: no #define CAF_SUITE")
    endif()
    file(STRINGS ${source} test_lines REGEX "^CAF_TEST\\(")
    foreach(line IN LISTS test_lines)
      string(REGEX REPLACE "^CAF_TEST\\(([^)]*)\\).*" "\\1" name "${line}")
      string(STRIP "${name}" name)
      if(NOT name MATCHES "^[A-Za-z0-9 _-]+$")
        message(FATAL_ERROR "${source}: '${name}': test names here are words (CAF's -t reads a regex)")
      endif()
      string(REPLACE " " "_" entry "${name}")
      add_test(NAME ${prefix}.${suite}.${entry}
        COMMAND $<TARGET_FILE:${target}> -n -s "^${suite}$" -t "^${name}$")
      # A selection that ran nothing (a renamed test before CMake saw it)
      # must not pass.
      set_tests_properties(${prefix}.${suite}.${entry} PROPERTIES
        FAIL_REGULAR_EXPRESSION "tests: +0[\r\n]" TIMEOUT 120)
    endforeach()
  endforeach()
endfunction()
