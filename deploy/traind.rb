# Homebrew formula for traind and trainctl on macOS (Apple silicon: MPS, or the CPU), built from
# this checkout:
#   brew install --build-from-source ./deploy/traind.rb
#   brew services start traind        # launchd keeps it running (the `service` block below)
#   trainctl devices                  # expect: mps, cpu
#
# UNBUILT: written on Linux, where Homebrew on macOS cannot run; nobody has installed it on a Mac
# yet (docs/macos.md says what is and is not verified there). Reports welcome.
class Traind < Formula
  desc "Training daemon for PyTorch jobs (MPS, CUDA, CPU) and trainctl, its client"
  homepage "https://github.com/traind/traind"
  # This checkout's committed main branch (Homebrew builds from a clean copy, not the work tree).
  url "file://#{File.expand_path("..", __dir__)}", using: :git, branch: "main"
  version "0.1.0"

  depends_on "cmake" => :build
  depends_on "node" => :build # the dashboard's chart library, npm ci at configure time
  depends_on "pkg-config" => :build
  depends_on "abseil"
  depends_on "cli11"
  depends_on "cpp-httplib"
  depends_on "grpc"
  depends_on "openssl@3"
  depends_on "prometheus-cpp"
  depends_on "protobuf"
  depends_on "pytorch"
  depends_on "sqlite"
  depends_on "tomlplusplus"
  depends_on "yaml-cpp"

  def install
    args = %W[
      -DTRAIND_BUILD_TESTS=OFF
      -DTRAIND_USE_CCACHE=OFF
      -DCMAKE_PREFIX_PATH=#{Formula["pytorch"].opt_prefix};#{HOMEBREW_PREFIX}
    ]
    system "cmake", "-S", ".", "-B", "build", *args, *std_cmake_args
    system "cmake", "--build", "build", "--target", "traind", "traind-worker", "trainctl"
    system "cmake", "--install", "build"
    # The service's settings, like the Debian package's /etc/traind/traind.toml.
    (etc/"traind").mkpath
    config = etc/"traind/traind.toml"
    unless config.exist?
      config.write <<~TOML
        # traind's settings for `brew services` (every flag of `traind --help`, without dashes).
        state-dir = "#{var}/traind"
        http = "127.0.0.1:8471"
      TOML
    end
  end

  def post_install
    (var/"traind").mkpath
    chmod 0700, var/"traind"
  end

  service do
    run [opt_bin/"traind", "--config", etc/"traind/traind.toml"]
    keep_alive crashed: true
    working_dir var/"traind"
    log_path var/"log/traind.log"
    error_log_path var/"log/traind.log"
  end

  def caveats
    <<~EOS
      Fashion-MNIST is not packaged for macOS: put its four IDX files in a directory and add
        data-root = ["/path/to/them"]
      to #{etc}/traind/traind.toml, and export FASHION_MNIST_DIR=/path/to/them.
      The dashboard's one-time login link is in #{var}/log/traind.log.
    EOS
  end

  test do
    assert_match "traind", shell_output("#{bin}/traind --version")
    (testpath/"traind.toml").write "state-dir = \"#{testpath}/state\"\n"
    chmod 0600, testpath/"traind.toml"
    assert_match(/state-dir = "#{testpath}\/state" +# #{testpath}\/traind.toml:1/,
                 shell_output("#{bin}/traind --config #{testpath}/traind.toml --print-config"))
    assert_match "submit", shell_output("#{bin}/trainctl --help")
  end
end
