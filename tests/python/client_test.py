#!/usr/bin/env python3
"""The traind package's Python client (python/traind/client.py) against a real traind
(tests/python/with_daemon.sh starts one), with the gRPC code the build generated from proto/:
submit, watch, wait, show, list, artifacts, download, cancel, and traind's refusals as errors.
  tests/python/with_daemon.sh build/bin /usr/bin/python3 tests/python/client_test.py BUILD_DIR
"""
import hashlib
import os
import pathlib
import sys
import tempfile
import unittest

BUILD = pathlib.Path(sys.argv.pop(1) if len(sys.argv) > 1 else "build").resolve()
sys.path.insert(0, str(BUILD / "python"))
try:
    import grpc
    from traind.client import Client, TERMINAL_STATES, default_download_name, pb
except ImportError as error:
    print(f"SKIP: the Python client cannot be imported: {error}")
    sys.exit(77)

FASHION = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.traind = Client()  # the daemon with_daemon.sh started (XDG_STATE_HOME's socket)
        self.addCleanup(self.traind.close)

    def test_a_job_submitted_from_python_is_watched_to_its_end_and_its_weights_fetched(self):
        job = self.traind.submit(model="lenet5", dataset="fashion-mnist", data_dir=FASHION,
                                 device="cpu", epochs=1, limit_train=1000, limit_test=200,
                                 name="from python")
        self.assertGreater(job.id, 0)
        kinds = [event.WhichOneof("kind") for event in self.traind.watch(job.id)]
        self.assertIn("step", kinds)
        self.assertIn("final_result", kinds)
        done = self.traind.wait(job.id)
        self.assertEqual(done.state, pb.Job.SUCCEEDED, done)
        self.assertIn(done.state, TERMINAL_STATES)
        self.assertIn(job.id, [j.id for j in self.traind.list()])
        self.assertEqual([j.id for j in self.traind.list(states=[pb.Job.RUNNING])], [])
        names = {a.name: a for a in self.traind.artifacts(job.id)}
        self.assertIn("best", names)
        with tempfile.TemporaryDirectory() as directory:
            path = self.traind.download(job.id, "best", os.path.join(directory, "w.pt"))
            with open(path, "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), names["best"].sha256)
            with self.assertRaises(FileExistsError):
                self.traind.download(job.id, "best", path)
            self.assertEqual(os.listdir(directory), ["w.pt"])  # nothing half-written left

    def test_refusals_are_grpc_errors_with_trainds_message(self):
        with self.assertRaises(grpc.RpcError) as refused:
            self.traind.submit(model="lenet5", dataset="fashion-mnist", epochs=-1)
        self.assertEqual(refused.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("epochs", refused.exception.details())
        with self.assertRaises(grpc.RpcError) as missing:
            self.traind.show(999999)
        self.assertEqual(missing.exception.code(), grpc.StatusCode.NOT_FOUND)

    def test_default_download_names_are_trainctls(self):
        # The same table as common/artifact_names_test.cc's DefaultDownloadNamesAreOneSafeFileName.
        for name, expected in [("best", "job7-best.pt"), ("checkpoints/model.pt", "job7-model.pt"),
                               ("plots/loss curve.png", "job7-loss_curve.png"),
                               ("logs/stdout", "job7-stdout"), ("\u00e9.png", "job7-__.png"),
                               (".hidden.txt", "job7-_.hidden.txt")]:
            self.assertEqual(default_download_name(7, name), expected, name)

    def test_a_queued_job_is_cancelled(self):
        self.traind.stub.SetQueueState(pb.SetQueueStateRequest(action=pb.SetQueueStateRequest.PAUSE))
        try:
            job = self.traind.submit(model="mlp", dataset="fashion-mnist", data_dir=FASHION,
                                     device="cpu", epochs=1)
            self.assertEqual(self.traind.cancel(job.id).state, pb.Job.CANCELLED)
        finally:
            self.traind.stub.SetQueueState(pb.SetQueueStateRequest(action=pb.SetQueueStateRequest.RESUME))


if __name__ == "__main__":
    unittest.main(verbosity=2)
