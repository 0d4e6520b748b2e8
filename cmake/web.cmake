# cmake/web.cmake - the web dashboard: `npm ci` (only when web/package-lock.json changed or
# web/node_modules is missing), the Vite build (only when web sources changed), and
# scripts/embed_web.py, which turns the built files into ${GM_WEB_ASSETS_C}. That source is the
# OBJECT library `gpumon_web_assets`, defining `gm_web_assets[]` and `gm_web_assets_count`
# (see scripts/embed_web.py). Also registers the dashboard's tests: web/unit (Vitest) and
# web/e2e (playwright-core driving Debian's Chromium against the real `gpumon serve`).
#
# Use, in the top CMakeLists.txt after the gpumon_server target:
#   include(cmake/web.cmake)
#   target_link_libraries(gpumon_server PRIVATE gpumon_web_assets)
#
# -DGM_WEB=OFF builds without Node.js: the table is then empty (gm_web_assets_count == 0).

option(GM_WEB "Build the web dashboard into gpumon (needs Node.js >= 20.19 and npm)" ON)

set(GM_WEB_DIR ${CMAKE_SOURCE_DIR}/web)
set(GM_WEB_DIST ${CMAKE_BINARY_DIR}/web/dist)
set(GM_WEB_ASSETS_C ${CMAKE_BINARY_DIR}/generated/web_assets.c)
set(GM_WEB_EMBED ${CMAKE_SOURCE_DIR}/scripts/embed_web.py)
find_program(GM_WEB_PYTHON3 NAMES python3 REQUIRED)

if(GM_WEB)
  find_program(GM_NODE NAMES node nodejs)
  find_program(GM_NPM NAMES npm)
  if(NOT GM_NODE OR NOT GM_NPM)
    message(FATAL_ERROR "The dashboard needs Node.js >= 20.19 and npm (./scripts/install-deps.sh), "
                        "or configure with -DGM_WEB=OFF to build gpumon without it.")
  endif()
  execute_process(COMMAND ${GM_NODE} --version OUTPUT_VARIABLE GM_NODE_VERSION
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  string(REGEX REPLACE "^v" "" GM_NODE_VERSION "${GM_NODE_VERSION}")
  if(GM_NODE_VERSION VERSION_LESS 20.19)
    message(FATAL_ERROR "Node.js ${GM_NODE_VERSION} is too old for the dashboard's Vite 7: "
                        "it needs >= 20.19 (or configure with -DGM_WEB=OFF).")
  endif()

  # npm writes node_modules/.package-lock.json on every install: as this command's output it is
  # missing when node_modules is, and older than package-lock.json after a dependency change.
  set(GM_WEB_INSTALLED ${GM_WEB_DIR}/node_modules/.package-lock.json)
  add_custom_command(
    OUTPUT ${GM_WEB_INSTALLED}
    COMMAND ${GM_NPM} ci --no-audit --no-fund --loglevel=error
    COMMAND ${CMAKE_COMMAND} -E touch ${GM_WEB_INSTALLED}
    DEPENDS ${GM_WEB_DIR}/package-lock.json ${GM_WEB_DIR}/package.json
    WORKING_DIRECTORY ${GM_WEB_DIR}
    COMMENT "web: npm ci"
    VERBATIM)

  file(GLOB_RECURSE GM_WEB_SOURCES CONFIGURE_DEPENDS ${GM_WEB_DIR}/src/*)
  set(GM_WEB_BUILT ${CMAKE_BINARY_DIR}/web/build.stamp)
  add_custom_command(
    OUTPUT ${GM_WEB_BUILT}
    # Type-checks (tsc --noEmit) then bundles into this build directory's web/dist, so build
    # directories never share or race on one output folder.
    COMMAND ${CMAKE_COMMAND} -E env GM_WEB_OUT=${GM_WEB_DIST} ${GM_NPM} run --silent build
    COMMAND ${CMAKE_COMMAND} -E touch ${GM_WEB_BUILT}
    DEPENDS ${GM_WEB_INSTALLED} ${GM_WEB_SOURCES} ${GM_WEB_DIR}/index.html
            ${GM_WEB_DIR}/vite.config.ts ${GM_WEB_DIR}/tsconfig.json
    WORKING_DIRECTORY ${GM_WEB_DIR}
    COMMENT "web: vite build"
    VERBATIM)

  add_custom_command(
    OUTPUT ${GM_WEB_ASSETS_C}
    COMMAND ${GM_WEB_PYTHON3} ${GM_WEB_EMBED} ${GM_WEB_DIST} ${GM_WEB_ASSETS_C}
    DEPENDS ${GM_WEB_BUILT} ${GM_WEB_EMBED}
    COMMENT "web: embedding the dashboard"
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

if(GM_WEB AND GM_TESTS)
  enable_testing()
  find_program(GM_CHROMIUM NAMES chromium chromium-browser PATHS /usr/bin NO_DEFAULT_PATH)
  if(NOT GM_CHROMIUM)
    set(GM_CHROMIUM /usr/bin/chromium) # the test then fails saying it is missing
  endif()
  add_test(NAME web/unit COMMAND ${GM_NPM} run --silent test WORKING_DIRECTORY ${GM_WEB_DIR})
  set_tests_properties(web/unit PROPERTIES TIMEOUT 120 ENVIRONMENT "CI=true;NO_COLOR=1")
  add_test(NAME web/e2e COMMAND ${GM_NPM} run --silent e2e WORKING_DIRECTORY ${GM_WEB_DIR})
  set_tests_properties(web/e2e PROPERTIES
    TIMEOUT 240
    ENVIRONMENT "GM_BUILD_DIR=${CMAKE_BINARY_DIR};GM_SOURCE_DIR=${CMAKE_SOURCE_DIR};GM_CHROMIUM=${GM_CHROMIUM};CI=true;NO_COLOR=1;ASAN_OPTIONS=detect_leaks=1:abort_on_error=0")
endif()
