# Install rules (`cmake --install build`) and the Debian package that
# scripts/package makes from them with CPack. Included by CMakeLists.txt once
# the hermes-bridge target exists.
#
# Everything the installed binary needs at run time is in it or in Debian
# packages: the Python adapter is embedded (scripts/cmake/embed_python.cmake),
# the libraries it links are declared as the package's dependencies.
include(GNUInstallDirs)
# Installing (and so CPack) takes the build as it is: scripts/package builds
# first unless told not to, and a test that packages a build must not relink
# the binary other tests are running.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

install(TARGETS hermes-bridge RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/hermes-bridge)
# The manual's pages beside it, where the README's links (docs/...) find them.
file(GLOB HB_DOC_PAGES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/docs/*.md)
install(FILES ${HB_DOC_PAGES} DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/hermes-bridge/docs)
install(FILES docs/hermes-bridge.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# The service's ExecStart names the installed binary. The prefix is only known
# at install time (`cmake --install --prefix`, or CPack's /usr while the build
# was configured for /usr/local), so the unit is configured then.
set(HB_SERVICE_TEMPLATE ${CMAKE_CURRENT_SOURCE_DIR}/scripts/systemd/hermes-bridge.service.in)
set(HB_SERVICE_FILE ${CMAKE_CURRENT_BINARY_DIR}/systemd/hermes-bridge.service)
if(IS_ABSOLUTE "${CMAKE_INSTALL_BINDIR}")
  set(HB_INSTALLED_BINARY "${CMAKE_INSTALL_BINDIR}/hermes-bridge")
else()
  set(HB_INSTALLED_BINARY "\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/hermes-bridge")
endif()
install(CODE "
  set(HB_BINARY \"${HB_INSTALLED_BINARY}\")
  configure_file(\"${HB_SERVICE_TEMPLATE}\" \"${HB_SERVICE_FILE}\" @ONLY)
")
# systemd looks for user units in <prefix>/lib/systemd/user for /usr and /usr/local.
install(FILES ${HB_SERVICE_FILE} scripts/systemd/hermes-bridge.socket DESTINATION lib/systemd/user)

# -- the .deb ----------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hermes-bridge)
if(PROJECT_VERSION)
  set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
else()
  set(CPACK_PACKAGE_VERSION 0.0.0)
endif()
set(CPACK_PACKAGE_CONTACT "hermes-bridge <dev@hermes-bridge.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "hosts hermes-agent sessions for socket clients such as Hermes Studio")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr) # what CPACK_SET_DESTDIR installs under
# Install with DESTDIR into the staging tree, so that CMAKE_INSTALL_PREFIX is
# /usr while the install rules run and the unit's ExecStart says /usr/bin.
set(CPACK_SET_DESTDIR ON)
set(CPACK_STRIP_FILES ON) # the build keeps debug info; the package need not
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
# The worker host (the default) runs the agent on a Python interpreter.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3")
find_program(HB_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(HB_DPKG_SHLIBDEPS)
  # Adds the packages of every library the binary links (libcaf-core0.17, ...).
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "python3, libc6, libstdc++6, libgcc-s1, libcaf-core0.17, libcaf-io0.17, libsqlite3-0, libpython3.11")
endif()
# Native sessions (`--harness native`) drive the hermes TUI in tmux.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "tmux")
include(CPack)
