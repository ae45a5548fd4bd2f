# What `cmake --install` adds beyond the binaries, and the Debian package CPack makes of it all
# (deploy/package.sh: `cpack -G DEB` in build/ -> traind_<version>_amd64.deb). Included from the
# top CMakeLists.txt where LibTorch is (the worker is part of the package).

# Man pages and shell completions, written by the programs themselves from their flag tables
# (traind --man-page, trainctl __man-page, trainctl completion SHELL), so they never disagree with
# --help. HOME=~ writes defaults as "~/.local/state/..." rather than the build user's home.
set(generated ${CMAKE_BINARY_DIR}/generated)
file(MAKE_DIRECTORY ${generated})
set(as_any_user ${CMAKE_COMMAND} -E env HOME=~ --unset=XDG_STATE_HOME --unset=XDG_CONFIG_HOME
                --unset=TRAINCTL_CONFIG --unset=TRAIND_CONFIG)
add_custom_command(
  OUTPUT ${generated}/man/traind.8.gz ${generated}/man/trainctl.1.gz
         ${generated}/completions/trainctl ${generated}/completions/_trainctl
         ${generated}/completions/trainctl.fish
  COMMAND ${CMAKE_COMMAND} -E make_directory ${generated}/man ${generated}/completions
  COMMAND ${as_any_user} sh -c "$<TARGET_FILE:traind> --man-page | gzip -9n > man/traind.8.gz"
  COMMAND ${as_any_user} sh -c "$<TARGET_FILE:trainctl> __man-page | gzip -9n > man/trainctl.1.gz"
  COMMAND sh -c "$<TARGET_FILE:trainctl> completion bash > completions/trainctl"
  COMMAND sh -c "$<TARGET_FILE:trainctl> completion zsh > completions/_trainctl"
  COMMAND sh -c "$<TARGET_FILE:trainctl> completion fish > completions/trainctl.fish"
  WORKING_DIRECTORY ${generated}
  DEPENDS traind trainctl
  COMMENT "Writing traind(8), trainctl(1) and trainctl's shell completions" VERBATIM)
add_custom_target(traind_docs ALL DEPENDS ${generated}/man/traind.8.gz)

install(FILES ${generated}/man/traind.8.gz DESTINATION share/man/man8)
install(FILES ${generated}/man/trainctl.1.gz DESTINATION share/man/man1)
install(FILES ${generated}/completions/trainctl DESTINATION share/bash-completion/completions)
install(FILES ${generated}/completions/_trainctl DESTINATION share/zsh/vendor-completions)
install(FILES ${generated}/completions/trainctl.fish DESTINATION share/fish/vendor_completions.d)
set(debian ${PROJECT_SOURCE_DIR}/deploy/debian)
if(NOT APPLE)
  install(FILES ${debian}/traind.service DESTINATION lib/systemd/system)
  install(FILES ${debian}/traind-user.service DESTINATION lib/systemd/user RENAME traind.service)
endif()
# Python's wheel of the client (script/CMakeLists.txt), for `pip install` in a venv.
install(DIRECTORY ${CMAKE_BINARY_DIR}/dist/ DESTINATION share/traind/python FILES_MATCHING
        PATTERN "traind-*.whl")
# The system service's config file, as shipped: the package's postinst copies it to
# /etc/traind/traind.toml where there is none, so an upgrade keeps the admin's edits and purge
# removes it (an install rule into /etc would also write there on `cmake --install --prefix ~/.local`).
install(FILES ${debian}/traind.toml DESTINATION share/traind)

# The package. Its version: TRAIND_PACKAGE_VERSION (deploy/package.sh passes one that grows with
# every commit, so a newer build upgrades an older one).
set(TRAIND_PACKAGE_VERSION "0.1.0" CACHE STRING "The Debian package's version")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME traind)
set(CPACK_PACKAGE_VERSION ${TRAIND_PACKAGE_VERSION})
set(CPACK_PACKAGE_CONTACT "traind maintainers <traind@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "training daemon for PyTorch jobs, and trainctl, its client")
set(CPACK_PACKAGE_DESCRIPTION
    "traind owns the accelerator (CUDA or CPU) and a persistent job queue, runs training and\n"
    "benchmark jobs (built-in networks, TorchScript models, Python training scripts) submitted\n"
    "over gRPC, and streams their loss, accuracy, memory and timing to any number of clients.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # traind_<version>_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends: from the libraries the binaries link
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
# bubblewrap: script jobs' sandbox (traind warns and runs them unconfined without it);
# dataset-fashion-mnist: the dataset the quick start trains on; python3: script jobs.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "bubblewrap, dataset-fashion-mnist, python3")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-grpcio, python3-protobuf, slurm-client")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${debian}/postinst ${debian}/prerm ${debian}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
include(CPack)
