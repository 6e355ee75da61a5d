# Install rules and the Debian package (CPack), included at the end of the top CMakeLists.txt.
#   cmake --install build --prefix P     P/bin/mhascope, P/share/mhascope/{assets,scripts},
#                                        .desktop entry, icons (SVG + PNG sizes), man page
#   scripts/package.sh                   a .deb built with -march=x86-64-v3 (see there)
# Layout under P/share/mhascope mirrors the source tree (assets/, scripts/), so assetsDir()
# (core/attention/model.cpp) finds the presets relative to the binary and `bench --train` finds
# scripts/bench_train_torch.py as it does from a source checkout.
include(GNUInstallDirs)

# A package runs on machines other than the one that built it: no -march=native in it.
option(MHASCOPE_PACKAGE "Configure a tree that scripts/package.sh turns into a .deb" OFF)
if(MHASCOPE_PACKAGE AND ("${MHASCOPE_MARCH} ${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_RELEASE}" MATCHES "native"))
  message(FATAL_ERROR "MHASCOPE_PACKAGE: -march=native would tie the package to this machine's CPU; "
                      "use -DMHASCOPE_MARCH=x86-64-v3 (what scripts/package.sh does)")
endif()

set(MHASCOPE_MAINTAINER "mhascope maintainers <mhascope@users.noreply.github.com>" CACHE STRING
    "Maintainer of the .deb (control file and changelog)")

if(MHASCOPE_BUILD_APP)
  set(MHASCOPE_SHARE "${CMAKE_INSTALL_DATADIR}/mhascope")
  install(TARGETS mhascope RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(DIRECTORY assets/presets assets/practice DESTINATION ${MHASCOPE_SHARE}/assets)
  install(PROGRAMS scripts/capture_attention.py scripts/bench_train_torch.py
          DESTINATION ${MHASCOPE_SHARE}/scripts)
  install(FILES scripts/mhascope_model.py DESTINATION ${MHASCOPE_SHARE}/scripts)
  install(FILES assets/mhascope.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
  install(FILES assets/icons/mhascope.svg DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
  foreach(size 16 32 48 64 128 256)
    install(FILES assets/icons/hicolor/${size}x${size}/mhascope.png
            DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${size}x${size}/apps)
  endforeach()

  # The man page is the binary's own --help texts (scripts/packaging/mhascope_manpage.cmake).
  set(MHASCOPE_MANPAGE "${CMAKE_BINARY_DIR}/man/mhascope.1.gz")
  add_custom_command(OUTPUT ${MHASCOPE_MANPAGE}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
    COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:mhascope> -DOUT=${MHASCOPE_MANPAGE}
            -DVERSION=${PROJECT_VERSION} -P ${CMAKE_CURRENT_LIST_DIR}/mhascope_manpage.cmake
    DEPENDS mhascope ${CMAKE_CURRENT_LIST_DIR}/mhascope_manpage.cmake
    COMMENT "man page from mhascope --help")
  add_custom_target(mhascope_manpage ALL DEPENDS ${MHASCOPE_MANPAGE})
  install(FILES ${MHASCOPE_MANPAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

  # Debian wants these two in every package (lintian errors otherwise); a package with a Debian
  # revision (-1) names its changelog changelog.Debian.gz.
  set(MHASCOPE_CHANGELOG "${CMAKE_BINARY_DIR}/debian/changelog.Debian.gz")
  configure_file(${CMAKE_CURRENT_LIST_DIR}/debian/changelog.in ${CMAKE_BINARY_DIR}/debian/changelog.Debian @ONLY)
  add_custom_command(OUTPUT ${MHASCOPE_CHANGELOG}
    COMMAND gzip -9nkf ${CMAKE_BINARY_DIR}/debian/changelog.Debian
    DEPENDS ${CMAKE_BINARY_DIR}/debian/changelog.Debian)
  add_custom_target(mhascope_changelog ALL DEPENDS ${MHASCOPE_CHANGELOG})
  install(FILES ${MHASCOPE_CHANGELOG} DESTINATION ${CMAKE_INSTALL_DOCDIR})
  install(FILES ${CMAKE_CURRENT_LIST_DIR}/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})

  if(MHASCOPE_BUILD_TESTS)
    add_test(NAME install_package
             COMMAND ${PROJECT_SOURCE_DIR}/tests/install/package_test.sh ${CMAKE_BINARY_DIR})
    set_tests_properties(install_package PROPERTIES LABELS install TIMEOUT 180)
  endif()
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mhascope)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${MHASCOPE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "see inside multi-head attention, stage by stage")
# CPack writes the summary as the synopsis and indents these lines as the extended description.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "mhascope runs multi-head attention with the arithmetic of PyTorch's
nn.MultiheadAttention and records every intermediate tensor. A desktop
window steps through the stages with heatmaps, lessons and exports;
headless commands (info, run, export, bench, train) do the same work on
servers. capture_attention.py records a layer of your own PyTorch model.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # libglfw3, libcairo2, libgl1 ... from the binary itself
# Not visible to dpkg-shlibdeps: the fonts the window and the exporter load.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "fonts-dejavu-core, python3")  # python3: the scripts in share/mhascope
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-torch, python3-numpy")
set(CPACK_STRIP_FILES ON)
include(CPack)
