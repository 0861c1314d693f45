"""The test binaries one `cargo test --no-run --message-format=json` built, one per line:
`<package> <target> <folder> <executable>`, where <folder> is the package's (cargo runs a test
from there) and <target> is `lib`, a binary's name, or an integration suite's path from the
package's folder without `.rs` (`tests/fast/api`). Reads cargo's JSON on stdin; shared by
test.sh and slow.sh, so both run a binary exactly as `cargo test` would."""

import json
import os
import sys

for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue  # cargo's own lines are JSON; anything else is a build script's noise
    if message.get("reason") != "compiler-artifact" or not message.get("executable"):
        continue
    if not message["profile"]["test"]:
        continue  # a binary built for the tests to start, not a test itself
    target = message["target"]
    folder = os.path.dirname(message["manifest_path"])
    name = target["name"]
    if "test" in target["kind"]:
        name = os.path.splitext(os.path.relpath(target["src_path"], folder))[0]
    elif "lib" in target["kind"] or "rlib" in target["kind"]:
        name = "lib"
    package = message["package_id"]
    # `path+file:///work/main/tasker-cli#tasker-cli@0.1.0` or `...#0.1.0` (name from the path)
    package = package.split("#", 1)[-1].split("@", 1)[0]
    if package[:1].isdigit():
        package = os.path.basename(folder)
    print(f"{package} {name} {folder} {message['executable']}")
