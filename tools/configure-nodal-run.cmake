# Writes nodal-run from nodal-run.in:
#   cmake -DIN=nodal-run.in -DOUT=path -DLIB=libnodal.so -DOPTIONS=options.txt -P this
file(READ ${IN} text)
file(READ ${OPTIONS} options)
string(STRIP "${options}" options)
string(REPLACE "HERE_DIR" "$here" lib "${LIB}")
string(REPLACE "@NODAL_RUN_LIB@" "${lib}" text "${text}")
string(REPLACE "@NODAL_RUN_OPTIONS@" "${options}" text "${text}")
file(WRITE ${OUT} "${text}")
file(CHMOD ${OUT} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                              WORLD_READ WORLD_EXECUTE)
