# Sets HOTPATH_COMMIT to the git commit of the source tree (12 hex digits), taken when CMake configures: "unknown"
# without git or outside a git checkout of this source tree. CMake configures again when HEAD or the branch it names
# moves, so a new commit is seen at the next build.
set(HOTPATH_COMMIT "unknown")
find_package(Git QUIET)

# The output of `git ARGN` in the source tree, in `out`; "" when it fails.
function(hotpath_git out)
    execute_process(COMMAND ${GIT_EXECUTABLE} ${ARGN} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                    OUTPUT_VARIABLE said ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE failed)
    if(failed)
        set(said "")
    endif()
    set(${out} "${said}" PARENT_SCOPE)
endfunction()

if(GIT_FOUND)
    hotpath_git(git_toplevel rev-parse --show-toplevel)
    hotpath_git(git_commit rev-parse --short=12 HEAD)
    if(git_toplevel AND git_commit)
        get_filename_component(git_toplevel ${git_toplevel} REALPATH)
        get_filename_component(source_dir ${PROJECT_SOURCE_DIR} REALPATH)
    endif()
    # A tarball unpacked inside another git repository is not a checkout of hotpath.
    if(git_commit AND git_toplevel STREQUAL source_dir)
        set(HOTPATH_COMMIT ${git_commit})
        # HEAD moves on a checkout; the branch's ref on a commit (its loose file, or packed-refs after a gc).
        hotpath_git(git_branch symbolic-ref -q HEAD)
        foreach(ref HEAD ${git_branch} packed-refs)
            hotpath_git(git_file rev-parse --git-path ${ref})
            if(git_file)
                get_filename_component(git_file ${git_file} ABSOLUTE BASE_DIR ${PROJECT_SOURCE_DIR})
                if(EXISTS ${git_file})
                    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${git_file})
                endif()
            endif()
        endforeach()
    endif()
endif()
