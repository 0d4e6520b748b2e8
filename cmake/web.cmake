# cmake/web.cmake - the web dashboard. The built dashboard (Vite's output) is committed under
# web/bundle/, so the C build needs only python3: scripts/embed_web.py turns those files into
# ${GM_WEB_ASSETS_C}, the OBJECT library `gpumon_web_assets` defining `gm_web_assets[]` and
# `gm_web_assets_count` (see scripts/embed_web.py). Node.js is needed only to change the
# dashboard (`make web`) and to test it: web/unit (Vitest), web/e2e (playwright-core driving
# Debian's Chromium against the real `gpumon serve`) and web/bundle (web/bundle/ equals a fresh
# build of web/), all through scripts/web.sh, which looks for Node.js when the test runs.
#
# Use, in the top CMakeLists.txt after the gpumon_server target:
#   include(cmake/web.cmake)
#   target_link_libraries(gpumon_server PRIVATE gpumon_web_assets)
#
# -DGM_WEB=OFF builds without the dashboard: the table is then empty (gm_web_assets_count == 0).

option(GM_WEB "Embed the dashboard (web/bundle/) in gpumon" ON)
option(GM_WEB_TESTS "Test the dashboard with Node.js (web/unit, web/e2e, web/bundle)" ON)

set(GM_WEB_DIR ${CMAKE_SOURCE_DIR}/web)
set(GM_WEB_BUNDLE ${GM_WEB_DIR}/bundle)
set(GM_WEB_ASSETS_C ${CMAKE_BINARY_DIR}/generated/web_assets.c)
set(GM_WEB_EMBED ${CMAKE_SOURCE_DIR}/scripts/embed_web.py)
find_program(GM_WEB_PYTHON3 NAMES python3 REQUIRED)

if(GM_WEB)
  if(NOT EXISTS ${GM_WEB_BUNDLE}/index.html)
    message(FATAL_ERROR "web/bundle/index.html is missing: restore it from git, rebuild it with "
                        "`make web` (needs Node.js), or configure with -DGM_WEB=OFF.")
  endif()
  file(GLOB_RECURSE GM_WEB_BUNDLE_FILES CONFIGURE_DEPENDS ${GM_WEB_BUNDLE}/*)
  add_custom_command(
    OUTPUT ${GM_WEB_ASSETS_C}
    COMMAND ${GM_WEB_PYTHON3} ${GM_WEB_EMBED} ${GM_WEB_BUNDLE} ${GM_WEB_ASSETS_C}
    DEPENDS ${GM_WEB_BUNDLE_FILES} ${GM_WEB_EMBED}
    COMMENT "web: embedding the dashboard (web/bundle)"
    VERBATIM)
else()
  add_custom_command(
    OUTPUT ${GM_WEB_ASSETS_C}
    COMMAND ${GM_WEB_PYTHON3} ${GM_WEB_EMBED} --empty ${GM_WEB_ASSETS_C}
    DEPENDS ${GM_WEB_EMBED}
    COMMENT "web: no dashboard (GM_WEB=OFF)"
    VERBATIM)
endif()

add_library(gpumon_web_assets OBJECT ${GM_WEB_ASSETS_C})
target_include_directories(gpumon_web_assets PRIVATE ${CMAKE_SOURCE_DIR}/src
                                                     ${CMAKE_SOURCE_DIR}/include)

if(GM_WEB AND GM_TESTS AND GM_WEB_TESTS)
  enable_testing()
  set(GM_WEB_SH ${CMAKE_SOURCE_DIR}/scripts/web.sh)
  find_program(GM_CHROMIUM NAMES chromium chromium-browser PATHS /usr/bin NO_DEFAULT_PATH)
  if(NOT GM_CHROMIUM)
    set(GM_CHROMIUM /usr/bin/chromium) # the test then fails saying it is missing
  endif()
  # npm ci once, before the others (which would otherwise take turns at it).
  add_test(NAME web/deps COMMAND sh ${GM_WEB_SH} deps)
  set_tests_properties(web/deps PROPERTIES TIMEOUT 600 FIXTURES_SETUP gm_web_deps)
  add_test(NAME web/unit COMMAND sh ${GM_WEB_SH} unit)
  set_tests_properties(web/unit PROPERTIES TIMEOUT 120 FIXTURES_REQUIRED gm_web_deps
    ENVIRONMENT "CI=true;NO_COLOR=1")
  add_test(NAME web/e2e COMMAND sh ${GM_WEB_SH} e2e)
  set_tests_properties(web/e2e PROPERTIES
    TIMEOUT 600 # about 150 s on an idle 2-core machine; a loaded one needs more
    FIXTURES_REQUIRED gm_web_deps
    ENVIRONMENT "GM_BUILD_DIR=${CMAKE_BINARY_DIR};GM_SOURCE_DIR=${CMAKE_SOURCE_DIR};GM_CHROMIUM=${GM_CHROMIUM};CI=true;NO_COLOR=1;ASAN_OPTIONS=detect_leaks=1:abort_on_error=0")
  # The committed bundle is what gpumon embeds: it must be what web/ builds to.
  add_test(NAME web/bundle COMMAND sh ${GM_WEB_SH} check)
  set_tests_properties(web/bundle PROPERTIES TIMEOUT 240 FIXTURES_REQUIRED gm_web_deps
    ENVIRONMENT "NO_COLOR=1")
endif()
