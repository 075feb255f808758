# embed_text.cmake: write OUT, a C file defining `const char NAME[]`, the bytes of the
# file IN from the first occurrence of START on (all of IN when START is empty), so a
# text kept as a file in the sources (scripts/slurm/attnsweep.sbatch) is compiled in
# without a copy. Run at build time:
#   cmake -DIN=FILE -DOUT=FILE.c -DNAME=symbol [-DSTART=text] -P embed_text.cmake
file(READ "${IN}" text)
set(at 0)
if(START)
  string(FIND "${text}" "${START}" at)
  if(at LESS 0)
    message(FATAL_ERROR "${IN}: no line '${START}'")
  endif()
endif()
file(READ "${IN}" hex OFFSET ${at} HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "\\\\x\\1" bytes "${hex}")
get_filename_component(source "${IN}" NAME)
file(WRITE "${OUT}.tmp"
     "// Generated from ${source} by cmake/embed_text.cmake at build time: edit ${source}.\n"
     "extern const char ${NAME}[];\n"
     "const char ${NAME}[] = \"${bytes}\";\n")
file(RENAME "${OUT}.tmp" "${OUT}")
