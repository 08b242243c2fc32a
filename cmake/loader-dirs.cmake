# loader-dirs.cmake - at install time: whether the library's directory is one
# the dynamic loader searches by itself (/lib, /usr/lib, /lib64, /usr/lib64,
# or a directory listed in /etc/ld.so.conf and /etc/ld.so.conf.d, such as
# /usr/local/lib or /usr/lib/x86_64-linux-gnu on Debian).
#   in:  CMAKE_INSTALL_PREFIX (the --prefix of this install), ND_INSTALL_LIBDIR
#   out: nd_libdir (absolute), nd_in_loader_path (TRUE or FALSE)
set(nd_libdir "${CMAKE_INSTALL_PREFIX}/${ND_INSTALL_LIBDIR}")
get_filename_component(nd_libdir "${nd_libdir}" ABSOLUTE)
set(nd_dirs /lib /usr/lib /lib64 /usr/lib64)
file(GLOB nd_conf /etc/ld.so.conf /etc/ld.so.conf.d/*.conf)
foreach(f ${nd_conf})
  file(STRINGS "${f}" lines REGEX "^/")
  list(APPEND nd_dirs ${lines})
endforeach()
list(FIND nd_dirs "${nd_libdir}" nd_found)
if(nd_found EQUAL -1)
  set(nd_in_loader_path FALSE)
else()
  set(nd_in_loader_path TRUE)
endif()
