# The lab's HTML report (src/hotpath/lab/html_report.cpp) embeds uPlot and web/'s page: npm ci installs the pinned uPlot
# (web/package-lock.json) into the build folder at configure time, and a build step turns the files into a .cpp.
# Sets HOTPATH_WEB_ASSETS_CPP to that generated file.
find_program(HOTPATH_NPM npm)
if(NOT HOTPATH_NPM)
    message(FATAL_ERROR "npm not found: hotpath lab's HTML report embeds uPlot from npm (web/package.json). "
                        "Install it (scripts/install-deps.sh installs Debian's npm) and configure again.")
endif()

set(hotpath_web_src ${PROJECT_SOURCE_DIR}/web)
set(hotpath_web_dir ${PROJECT_BINARY_DIR}/web)
configure_file(${hotpath_web_src}/package.json ${hotpath_web_dir}/package.json COPYONLY)
configure_file(${hotpath_web_src}/package-lock.json ${hotpath_web_dir}/package-lock.json COPYONLY)
set(hotpath_uplot_dist ${hotpath_web_dir}/node_modules/uplot/dist)
# npm ci again only when the lock changed since the last install (it needs the registry).
file(SHA256 ${hotpath_web_src}/package-lock.json hotpath_web_lock_hash)
set(hotpath_web_stamp ${hotpath_web_dir}/npm-ci.stamp)
set(hotpath_web_installed "")
if(EXISTS ${hotpath_web_stamp})
    file(READ ${hotpath_web_stamp} hotpath_web_installed)
endif()
if(NOT hotpath_web_installed STREQUAL hotpath_web_lock_hash OR NOT EXISTS ${hotpath_uplot_dist}/uPlot.iife.min.js)
    message(STATUS "npm ci in ${hotpath_web_dir} (uPlot for the lab report)")
    execute_process(COMMAND ${HOTPATH_NPM} ci --no-audit --no-fund --ignore-scripts
                    WORKING_DIRECTORY ${hotpath_web_dir} RESULT_VARIABLE hotpath_npm_result
                    OUTPUT_VARIABLE hotpath_npm_out ERROR_VARIABLE hotpath_npm_out TIMEOUT 300)
    if(NOT hotpath_npm_result EQUAL 0)
        message(FATAL_ERROR "npm ci in ${hotpath_web_dir} failed (${hotpath_npm_result}):\n${hotpath_npm_out}")
    endif()
    file(WRITE ${hotpath_web_stamp} "${hotpath_web_lock_hash}")
endif()

set(hotpath_web_assets
    uplot_js=${hotpath_uplot_dist}/uPlot.iife.min.js
    uplot_css=${hotpath_uplot_dist}/uPlot.min.css
    report_html=${hotpath_web_src}/report.html
    report_css=${hotpath_web_src}/report.css
    report_js=${hotpath_web_src}/report.js)
set(hotpath_web_files "")
foreach(asset IN LISTS hotpath_web_assets)
    string(REGEX REPLACE "^[a-z_]+=" "" path "${asset}")
    list(APPEND hotpath_web_files ${path})
endforeach()
set(HOTPATH_WEB_ASSETS_CPP ${PROJECT_BINARY_DIR}/generated/lab_web_assets.cpp)
add_custom_command(OUTPUT ${HOTPATH_WEB_ASSETS_CPP}
                   COMMAND ${CMAKE_COMMAND} -DOUTPUT=${HOTPATH_WEB_ASSETS_CPP} "-DASSETS=${hotpath_web_assets}"
                           -P ${PROJECT_SOURCE_DIR}/cmake/embed-assets.cmake
                   DEPENDS ${hotpath_web_files} ${PROJECT_SOURCE_DIR}/cmake/embed-assets.cmake
                   COMMENT "Embedding uPlot and web/ into the lab report" VERBATIM)
