"""The griptape framework's own GriptapeCloudFileManagerDriver against Loom:
create asset -> bodiless CreateAssetUrl -> PUT/GET the bytes at the URL, as
the published client does it. Run by .ci/griptape-compat.ts."""
import os
import sys

from griptape.drivers.file_manager.griptape_cloud import GriptapeCloudFileManagerDriver

driver = GriptapeCloudFileManagerDriver(
    base_url=os.environ["LOOM_URL"], api_key=os.environ["LOOM_KEY"], bucket_id=os.environ["LOOM_BUCKET"], workdir="/reports"
)
failures = []


def check(what, got, expected):
    if got != expected:
        failures.append(f"{what}: expected {expected!r}, got {got!r}")


check("save", driver.try_save_file("q3/summary.txt", b"revenue up"), f"buckets/{os.environ['LOOM_BUCKET']}/assets/reports/q3/summary.txt")
check("load", driver.try_load_file("q3/summary.txt"), b"revenue up")
driver.try_save_file("q3/summary.txt", b"revenue up, again")
check("load after overwrite", driver.try_load_file("q3/summary.txt"), b"revenue up, again")
driver.try_save_file("q3/notes.md", b"# notes")
check("list", sorted(driver.try_list_files("q3")), ["reports/q3/notes.md", "reports/q3/summary.txt"])
check("list with postfix", driver.try_list_files("q3", postfix=".md"), ["reports/q3/notes.md"])
try:
    driver.try_load_file("missing.txt")
    failures.append("load of a missing file: no FileNotFoundError")
except FileNotFoundError:
    pass
data = os.urandom(3_000_000)
driver.try_save_file("blob.bin", data)
check("3 MB binary round trip", driver.try_load_file("blob.bin") == data, True)

if failures:
    print("griptape file manager driver against Loom FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
print(f"griptape file manager driver against Loom ({os.environ['LOOM_STORE']}): save, load, overwrite, list, postfix, missing, 3 MB binary: ok")
