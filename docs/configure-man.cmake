# Writes nodal.3 from nodal.3.in: cmake -DIN= -DOUT= -DVERSION= -DOPTIONS=<options.man> -P this
file(READ ${IN} text)
file(READ ${OPTIONS} options)
string(STRIP "${options}" options)
string(REPLACE "@NODAL_VERSION@" "${VERSION}" text "${text}")
string(REPLACE "@NODAL_OPTIONS_MAN@" "${options}" text "${text}")
file(WRITE ${OUT} "${text}")
