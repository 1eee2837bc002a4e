# The library graph is a stack of layers that the folders show (docs/architecture.md):
#
#   base <- digest, rundir <- trace, capture <- run <- align <- diff, recorder <- analysis,
#        online <- report <- cli <- tools
#
# rundir: what a run directory holds and how a recording gets into one (its lock, the staging
# directory, interrupted recordings), for the recorder, the run loader and the CLI alike;
# run: a recorded run opened for reading; align: which ops of two runs correspond; diff: the
# one-rank walk and comparison; analysis: what runs on a diff's result (setup checks, order
# across ranks, NaN origin, explain, tolerances); online: record --against, the recorder's
# observer implemented with the diff's rules. watch (hangs and stragglers, its ring and monitor)
# needs only base: it sits on layer 1 beside digest, and so do machines (faulty machines
# from per-machine metrics) and optim (the CAME optimizer's fused kernel); machines_fit (its
# denoisers trained with libtorch) sits on machines.
#
# A library may link libraries of its own folder and of lower layers; never one of a higher
# layer or of another folder on its own layer (the recorder sits beside the diff: neither links
# the other). upguard_check_layers() fails the configuration when an edge breaks this, and
# tests/cmake/layers_test.cmake checks the rule itself.

set(UPGUARD_LAYERS
  base 0
  digest 1 rundir 1 watch 1 machines 1 optim 1
  trace 2 capture 2 machines_fit 2
  run 3
  align 4
  diff 5 recorder 5
  analysis 6 online 6
  report 7
  cli 8
  tools 9)

# Sets `out` to the layer of `folder`, or to "" when the folder has none.
function(upguard_layer_of folder out)
  list(FIND UPGUARD_LAYERS ${folder} idx)
  if(idx EQUAL -1)
    set(${out} "" PARENT_SCOPE)
  else()
    math(EXPR idx "${idx} + 1")
    list(GET UPGUARD_LAYERS ${idx} layer)
    set(${out} ${layer} PARENT_SCOPE)
  endif()
endfunction()

# Sets `out` to "" when library `lib` (in `folder`) may link `dep` (in `dep_folder`), else to
# the reason.
function(upguard_layer_problem lib folder dep dep_folder out)
  set(${out} "" PARENT_SCOPE)
  if(folder STREQUAL dep_folder)
    return()
  endif()
  upguard_layer_of(${folder} layer)
  upguard_layer_of(${dep_folder} dep_layer)
  if(layer STREQUAL "" OR dep_layer STREQUAL "")
    string(CONCAT problem "${lib} (${folder}) links ${dep} (${dep_folder}): a folder without a "
                          "layer in cmake/upguard_layers.cmake")
    set(${out} "${problem}" PARENT_SCOPE)
  elseif(NOT dep_layer LESS layer)
    string(CONCAT problem "${lib} (${folder}, layer ${layer}) links ${dep} (${dep_folder}, "
                          "layer ${dep_layer}): a library links only its own folder and lower "
                          "layers")
    set(${out} "${problem}" PARENT_SCOPE)
  endif()
endfunction()

# Checks every edge between upguard libraries (recorded by upguard_cc_library), and draws the
# graph that passed into `file` (one line a library, lowest layer first:
# "5 diff/      diff -> align run trace base").
function(upguard_check_layers file)
  get_property(libs GLOBAL PROPERTY UPGUARD_LIBRARIES)
  set(lines "")
  foreach(lib ${libs})
    get_target_property(folder ${lib} UPGUARD_FOLDER)
    get_target_property(deps ${lib} UPGUARD_DEPS)
    set(linked "")
    foreach(dep ${deps})
      if(NOT dep MATCHES "^upguard_" OR NOT TARGET ${dep})
        continue()
      endif()
      get_target_property(dep_folder ${dep} UPGUARD_FOLDER)
      upguard_layer_problem(${lib} ${folder} ${dep} ${dep_folder} problem)
      if(problem)
        message(FATAL_ERROR "library graph: ${problem}")
      endif()
      string(REPLACE "upguard_" "" dep_name ${dep})
      string(APPEND linked " ${dep_name}")
    endforeach()
    upguard_layer_of(${folder} layer)
    string(REPLACE "upguard_" "" name ${lib})
    string(SUBSTRING "${folder}/          " 0 10 folder_column)
    list(APPEND lines "${layer} ${folder_column} ${name} ->${linked}")
  endforeach()
  list(SORT lines)
  list(JOIN lines "\n" text)
  file(WRITE ${file} "# upguard's library graph (cmake/upguard_layers.cmake): layer, folder, library -> "
                     "what it links\n${text}\n")
endfunction()
