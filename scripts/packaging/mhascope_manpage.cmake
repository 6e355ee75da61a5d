# Writes mhascope.1.gz from the binary's own --help texts (run in script mode at build time):
#   cmake -DEXE=path/to/mhascope -DOUT=mhascope.1.gz -DVERSION=0.1.0 -P mhascope_manpage.cmake
# The window's options and every subcommand's --help become sections, word for word, so the man
# page cannot disagree with the program. gzip -9n: no name or timestamp in the header (reproducible).

function(help_text out)
  execute_process(COMMAND "${EXE}" ${ARGN} --help OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "'${EXE} ${ARGN} --help' failed (${rc}): ${err}")
  endif()
  # roff: a backslash is \e, a minus sign \-; a line starting with . or ' would be a request, so guard it with \&.
  string(REPLACE "\\" "\\e" text "${text}")
  string(REPLACE "-" "\\-" text "${text}")  # an option's dash, not a hyphen: copy-pasteable
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  string(STRIP "${text}" text)
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

help_text(window)
set(page ".TH MHASCOPE 1 \"\" \"mhascope ${VERSION}\" \"User Commands\"
.SH NAME
mhascope \\- see inside multi-head attention, stage by stage
.SH SYNOPSIS
.B mhascope
[\\fIWINDOW OPTIONS\\fR]
.br
.B mhascope
.BR info | run | export | bench | train | decode | circuits | compare | predict
[\\fIOPTIONS\\fR]
.SH DESCRIPTION
mhascope runs multi-head attention with the arithmetic of PyTorch's nn.MultiheadAttention and
records every intermediate tensor. Without a command it opens a window that steps through the
stages; the commands need no display. Heads, batch items and token positions are counted from 0.
.SH WINDOW OPTIONS
.nf
${window}
.fi
")
foreach(cmd info run export bench train decode circuits compare predict)
  help_text(sub ${cmd})
  string(APPEND page ".SH COMMAND: ${cmd}\n.nf\n${sub}\n.fi\n")
endforeach()
string(APPEND page ".SH FILES
.TP
.I <prefix>/share/mhascope/assets/presets/
the bundled presets (found relative to the binary; \\fBMHASCOPE_ASSETS\\fR overrides the folder)
.TP
.I <prefix>/share/mhascope/scripts/capture_attention.py
records an nn.MultiheadAttention layer of a PyTorch model for mhascope
.TP
.I ~/.config/mhascope/
imgui.ini and session.json of the window (\\fB$XDG_CONFIG_HOME\\fR/mhascope if set)
.SH EXAMPLES
.nf
mhascope info \\-\\-preset paper
mhascope export \\-\\-preset cat \\-\\-stage weights \\-\\-head all \\-\\-out cat_weights.svg
.fi
")

get_filename_component(plain "${OUT}" NAME_WLE)
get_filename_component(dir "${OUT}" DIRECTORY)
file(WRITE "${dir}/${plain}" "${page}")
execute_process(COMMAND gzip -9nf "${dir}/${plain}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gzip of ${dir}/${plain} failed")
endif()
