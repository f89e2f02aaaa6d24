# Writes a command's man page from its own --help and --version with help2man, so the page and the
# help are one text. For weave, each subcommand's --help goes in a COMMANDS section.
#   cmake -DPROGRAM=exe -DHELP2MAN=help2man -DINCLUDE=page.h2m -DOUT=page.1 -DNAME="..."
#         [-DSUBCOMMANDS=a,b] [-DSOURCE_DATE_EPOCH=N] -P help2man.cmake
file(READ ${INCLUDE} include_text)
if(SUBCOMMANDS)
  string(REPLACE "," ";" SUBCOMMANDS "${SUBCOMMANDS}") # commas: a list would not survive the command line
  string(APPEND include_text "\n[COMMANDS]\n")
  foreach(sub IN LISTS SUBCOMMANDS)
    execute_process(COMMAND ${PROGRAM} ${sub} --help OUTPUT_VARIABLE help RESULT_VARIABLE status)
    if(NOT status EQUAL 0)
      message(FATAL_ERROR "${PROGRAM} ${sub} --help failed (${status})")
    endif()
    # roff: a backslash is \e, and a line must not start with a control character.
    string(REPLACE "\\" "\\e" help "${help}")
    string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" help "${help}")
    string(APPEND include_text ".SS \"weave ${sub}\"\n.nf\n${help}.fi\n")
  endforeach()
endif()
get_filename_component(out_name ${OUT} NAME)
set(combined ${OUT}.h2m)
file(WRITE ${combined} "${include_text}")
if(SOURCE_DATE_EPOCH)
  set(ENV{SOURCE_DATE_EPOCH} ${SOURCE_DATE_EPOCH}) # the page's date, not today's: reproducible
endif()
set(ENV{LC_ALL} C.UTF-8)
execute_process(COMMAND ${HELP2MAN} --no-info --no-discard-stderr --name=${NAME} --include=${combined}
                        --output=${OUT} ${PROGRAM}
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "help2man ${PROGRAM} failed (${status})")
endif()
file(REMOVE ${combined})
