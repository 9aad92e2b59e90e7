"""A unittest case with a temporary directory of its own, removed after
each test, and a helper to write files into it."""
import os
import shutil
import tempfile
import unittest


class TempCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write(self, name, text):
        """Write text to name under the temporary directory (making the
        directories on the way); its path."""
        path = os.path.join(self.tmp, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path
