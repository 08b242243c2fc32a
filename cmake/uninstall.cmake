# uninstall.cmake - removes what `cmake --install` (or `make install`)
# installed from one build directory, as listed in its install manifest.
#
#   cmake -DMANIFEST=BUILD/install_manifest.txt -P cmake/uninstall.cmake
#
# Every file of the manifest is removed (one line each; a file already gone
# is said, not an error), under $DESTDIR when that is set, as for the install
# (the manifest lists the paths without it); then nodal's own directory,
# lib/cmake/nodal, when it is left empty. The loader cache is refreshed when
# run as root, as `make install` does. The manifest is kept, renamed
# install_manifest.txt.removed, so a second run finds nothing to do and says
# so.
if(NOT MANIFEST OR NOT EXISTS "${MANIFEST}")
  message(FATAL_ERROR "nodal uninstall: no install manifest '${MANIFEST}': "
                      "nothing was installed from this build directory (or it was uninstalled)")
endif()
file(STRINGS "${MANIFEST}" nd_files)
set(nd_removed 0)
set(nd_dirs "")
foreach(f ${nd_files})
  set(f "$ENV{DESTDIR}${f}")
  if(IS_SYMLINK "${f}" OR EXISTS "${f}")
    file(REMOVE "${f}")
    if(IS_SYMLINK "${f}" OR EXISTS "${f}")
      message(FATAL_ERROR "nodal uninstall: could not remove ${f} (permissions? try sudo make uninstall)")
    endif()
    message(STATUS "Removed: ${f}")
    math(EXPR nd_removed "${nd_removed} + 1")
  else()
    message(STATUS "Already gone: ${f}")
  endif()
  get_filename_component(d "${f}" DIRECTORY)
  get_filename_component(name "${d}" NAME)
  if(name STREQUAL "nodal")     # lib/cmake/nodal: nodal's own directory
    list(APPEND nd_dirs "${d}")
  endif()
endforeach()
list(REMOVE_DUPLICATES nd_dirs)
foreach(d ${nd_dirs})
  file(GLOB left "${d}/*")
  if(IS_DIRECTORY "${d}" AND NOT left)
    file(REMOVE_RECURSE "${d}")
    message(STATUS "Removed: ${d}/")
  endif()
endforeach()
file(RENAME "${MANIFEST}" "${MANIFEST}.removed")
execute_process(COMMAND id -u OUTPUT_VARIABLE nd_uid OUTPUT_STRIP_TRAILING_WHITESPACE)
if(nd_uid STREQUAL "0" AND (NOT DEFINED ENV{DESTDIR} OR "$ENV{DESTDIR}" STREQUAL ""))
  execute_process(COMMAND ldconfig)
endif()
message(STATUS "nodal uninstall: removed ${nd_removed} files")
