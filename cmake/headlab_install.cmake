# cmake/headlab_install.cmake — the installed library (issue 28), included by the top-level
# CMakeLists.txt when HEADLAB_LIBRARY is on:
#   lib/libheadlab.so             the engine and the research toolbox in one shared library
#   lib/libheadlab_<part>.a       the same parts as static libraries (util, core, tokenizer,
#                                 model, formats, analysis, research)
#   include/headlab/              every header of those parts, as the tree lays them out
#                                 ("model/forward.h"), and headlab.h, the umbrella with the contracts
#   lib/cmake/headlab/            find_package(headlab): headlab::headlab (shared),
#                                 headlab::headlab_static (all the static parts), headlab::<part>
#   lib/pkgconfig/headlab.pc      pkg-config --cflags --libs headlab (the shared library)
# The server, the trainer, the course and the CLI are not installed: they are programs, not
# a library's API.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(HEADLAB_LIBRARY_PARTS util core tokenizer model formats analysis research)
set(HEADLAB_LIBRARY_TARGETS)
foreach(part IN LISTS HEADLAB_LIBRARY_PARTS)
  list(APPEND HEADLAB_LIBRARY_TARGETS headlab_${part})
  set_target_properties(headlab_${part} PROPERTIES EXPORT_NAME ${part})
endforeach()

# libheadlab.so: every part's objects, compiled once for the static parts and the shared library
# alike (position-independent: HEADLAB_LIBRARY). ($<LINK_LIBRARY:WHOLE_ARCHIVE,...> would do
# the same but CMake refuses it when the parts also link each other.)
# headlab::library_version() (include/headlab.h) is in util, so the static parts have it too.
configure_file(${PROJECT_SOURCE_DIR}/cmake/headlab_version.cpp.in ${PROJECT_BINARY_DIR}/headlab_version.cpp @ONLY)
target_sources(headlab_util PRIVATE ${PROJECT_BINARY_DIR}/headlab_version.cpp)
set(HEADLAB_LIBRARY_OBJECTS)
foreach(t IN LISTS HEADLAB_LIBRARY_TARGETS)
  list(APPEND HEADLAB_LIBRARY_OBJECTS $<TARGET_OBJECTS:${t}>)
endforeach()
add_library(headlab_shared SHARED ${HEADLAB_LIBRARY_OBJECTS})
set_target_properties(headlab_shared PROPERTIES OUTPUT_NAME headlab EXPORT_NAME headlab
                      VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
                      LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib)
# what the parts link privately (their pkg-config targets are their folders' own: found again
# here), and tl::expected, which util/result.h shows
pkg_check_modules(HEADLAB_SO_DEPS REQUIRED IMPORTED_TARGET openblas oniguruma libutf8proc)
target_link_libraries(headlab_shared PUBLIC tl::expected
                      PRIVATE PkgConfig::HEADLAB_SO_DEPS nlohmann_json::nlohmann_json Threads::Threads)
target_include_directories(headlab_shared PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>
                                                 $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>)
# a symbol no part defines is an error at link time, not when a program loads the library
target_link_options(headlab_shared PRIVATE -Wl,--no-undefined)
# the static parts together, as one target
add_library(headlab_static INTERFACE)
target_link_libraries(headlab_static INTERFACE ${HEADLAB_LIBRARY_TARGETS})

install(TARGETS headlab_shared headlab_static ${HEADLAB_LIBRARY_TARGETS} EXPORT headlabTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/headlab ${CMAKE_INSTALL_INCLUDEDIR})
foreach(part IN LISTS HEADLAB_LIBRARY_PARTS)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/${part} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/headlab
          FILES_MATCHING PATTERN "*.h")
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/include/headlab.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/headlab)

set(HEADLAB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/headlab)
install(EXPORT headlabTargets NAMESPACE headlab:: DESTINATION ${HEADLAB_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/headlabConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/headlabConfig.cmake INSTALL_DESTINATION ${HEADLAB_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/headlabConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/headlabConfig.cmake ${PROJECT_BINARY_DIR}/headlabConfigVersion.cmake
        DESTINATION ${HEADLAB_CMAKE_DIR})
configure_file(${PROJECT_SOURCE_DIR}/cmake/headlab.pc.in ${PROJECT_BINARY_DIR}/headlab.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/headlab.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
