# localize-archive.cmake - makes a static library export only its public
# names, as the shared library does.
#
#   cmake -DARCHIVE=libnodal.a -DWORK=dir -DLD=ld -DOBJCOPY=objcopy
#         -DREADELF=readelf -DAR=ar -DRANLIB=ranlib -P localize-archive.cmake
#
# The archive's objects are linked into one relocatable object (ld -r), so
# that calls between them are resolved inside it; then every symbol of hidden
# visibility (the core's nd_* names, built with -fvisibility=hidden) is made
# local, and the object is archived again, alone. Symbols that name a COMDAT
# group (the C++ personality pointer DW.ref.__gxx_personality_v0) stay as they
# are: the linker merges groups of one name across objects, and a local
# signature would let it drop this object's copy while its code still uses it.
# Last, the object's .bss is renamed nodal_bss (below).
cmake_minimum_required(VERSION 3.20)
foreach(v ARCHIVE WORK LD OBJCOPY READELF AR RANLIB)
  if(NOT ${v})
    message(FATAL_ERROR "localize-archive.cmake: -D${v}= is required")
  endif()
endforeach()
set(obj ${WORK}/localized.o)
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${LD} -r --whole-archive ${ARCHIVE} -o ${obj} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "localize-archive.cmake: ${LD} -r failed on ${ARCHIVE}")
endif()
execute_process(COMMAND ${READELF} -gW ${obj} OUTPUT_VARIABLE groups RESULT_VARIABLE rc1)
execute_process(COMMAND ${READELF} -sW ${obj} OUTPUT_VARIABLE syms RESULT_VARIABLE rc2)
if(NOT rc1 EQUAL 0 OR NOT rc2 EQUAL 0)
  message(FATAL_ERROR "localize-archive.cmake: ${READELF} failed on ${obj}")
endif()
set(signatures "")
string(REGEX MATCHALL "COMDAT group section \\[[ 0-9]+\\] `[^']*' \\[[^]]+\\]" lines "${groups}")
foreach(l ${lines})
  string(REGEX REPLACE ".*\\[([^]]+)\\]$" "\\1" name "${l}")
  list(APPEND signatures "${name}")
endforeach()
# readelf -s: Num: Value Size Type Bind Vis Ndx Name
set(hidden "")
string(REPLACE "\n" ";" syms "${syms}")
foreach(l ${syms})
  if(l MATCHES "^ *[0-9]+: [0-9a-f]+ +[0-9x]+ [A-Z_]+ +(GLOBAL|WEAK) +(HIDDEN|INTERNAL) +([0-9]+|ABS|COM) +([^ ]+)$")
    set(name ${CMAKE_MATCH_4})
    if(NOT name IN_LIST signatures)
      string(APPEND hidden "${name}\n")
    endif()
  endif()
endforeach()
if(hidden STREQUAL "")
  message(FATAL_ERROR "localize-archive.cmake: no hidden symbol found in ${ARCHIVE}: was it built with -fvisibility=hidden?")
endif()
file(WRITE ${WORK}/hidden.txt "${hidden}")
execute_process(COMMAND ${OBJCOPY} --localize-symbols=${WORK}/hidden.txt ${obj} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "localize-archive.cmake: ${OBJCOPY} failed on ${obj}")
endif()
# The object's .bss (all of the core's zero-filled data, one section after
# ld -r) becomes nodal_bss: a name the linker of a static program gives
# bounds to (__start_nodal_bss, __stop_nodal_bss), so that nodal can opt its
# own data out of transparent huge pages there as libnodal.so does
# (src/os/os.c: nd_os_static_data_thp_opt_out), and not the program's.
execute_process(COMMAND ${READELF} -SW ${obj} OUTPUT_VARIABLE sections RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT sections MATCHES "\\] \\.bss +NOBITS")
  message(FATAL_ERROR "localize-archive.cmake: no .bss section of its own in ${obj}")
endif()
execute_process(COMMAND ${OBJCOPY} --rename-section .bss=nodal_bss ${obj} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "localize-archive.cmake: ${OBJCOPY} could not rename .bss in ${obj}")
endif()
file(REMOVE ${ARCHIVE})
execute_process(COMMAND ${AR} qc ${ARCHIVE} ${obj} RESULT_VARIABLE rc)
execute_process(COMMAND ${RANLIB} ${ARCHIVE} RESULT_VARIABLE rc3)
if(NOT rc EQUAL 0 OR NOT rc3 EQUAL 0)
  message(FATAL_ERROR "localize-archive.cmake: could not archive ${obj} as ${ARCHIVE}")
endif()
