"""TAP for the Python tests: run a module's unittest cases and print one
TAP line per test (and the failure under it, as comments), then the plan.
prove reads it like the shell tests' tests/lib/tap.sh."""
import contextlib
import io
import sys
import unittest


class TAPResult(unittest.TextTestResult):
    n = 0

    def _line(self, ok, test, extra=""):
        TAPResult.n += 1
        print(f"{'ok' if ok else 'not ok'} {TAPResult.n} - {test.id().split('.', 1)[1]}{extra}")
        sys.stdout.flush()

    def addSuccess(self, test):
        super().addSuccess(test)
        self._line(True, test)

    def _diag(self, test, err):
        # Why it failed: on the real stderr (run() hides the runner's), as
        # Test::More does, so that prove shows it without -v.
        text = self._exc_info_to_string(err, test).rstrip("\n")
        print("# " + text.replace("\n", "\n# "), file=sys.__stderr__)
        sys.__stderr__.flush()

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._line(False, test)
        self._diag(test, err)

    def addError(self, test, err):
        super().addError(test, err)
        self._line(False, test)
        self._diag(test, err)

    def addSubTest(self, test, subtest, err):
        # A failing subtest gets its own line; passing ones count in their test's.
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._line(False, subtest)
            self._diag(test, err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._line(True, test, f" # SKIP {reason}")


def run(module_name):
    """Run every test case of the module; exit 0 if all passed."""
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[module_name])
    with contextlib.redirect_stderr(io.StringIO()):
        res = unittest.TextTestRunner(stream=io.StringIO(), resultclass=TAPResult).run(suite)
    print(f"1..{TAPResult.n}")
    sys.exit(0 if res.wasSuccessful() else 1)
