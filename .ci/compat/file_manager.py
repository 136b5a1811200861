"""The griptape framework's own GriptapeCloudFileManagerDriver against Loom:
create asset -> bodiless CreateAssetUrl -> PUT/GET the bytes at the URL, as
the published client does it. Run by .ci/griptape-compat.ts."""
import os

from griptape.drivers.file_manager.griptape_cloud import GriptapeCloudFileManagerDriver

from checks import Checks

driver = GriptapeCloudFileManagerDriver(
    base_url=os.environ["LOOM_URL"], api_key=os.environ["LOOM_KEY"], bucket_id=os.environ["LOOM_BUCKET"], workdir="/reports"
)
checks = Checks(f"griptape file manager driver ({os.environ['LOOM_STORE']})")
check = checks.check

check("save", driver.try_save_file("q3/summary.txt", b"revenue up"), f"buckets/{os.environ['LOOM_BUCKET']}/assets/reports/q3/summary.txt")
check("load", driver.try_load_file("q3/summary.txt"), b"revenue up")
driver.try_save_file("q3/summary.txt", b"revenue up, again")
check("load after overwrite", driver.try_load_file("q3/summary.txt"), b"revenue up, again")
driver.try_save_file("q3/notes.md", b"# notes")
check("list", sorted(driver.try_list_files("q3")), ["reports/q3/notes.md", "reports/q3/summary.txt"])
check("list with postfix", driver.try_list_files("q3", postfix=".md"), ["reports/q3/notes.md"])
try:
    driver.try_load_file("missing.txt")
    checks.fail("load of a missing file: no FileNotFoundError")
except FileNotFoundError:
    pass
data = os.urandom(3_000_000)
driver.try_save_file("blob.bin", data)
check("3 MB binary round trip", driver.try_load_file("blob.bin") == data, True)

checks.report("save, load, overwrite, list, postfix, missing, 3 MB binary")
