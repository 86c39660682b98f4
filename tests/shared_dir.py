"""Where the project's read-only ../shared directory is (next to the repository, or next
to the directory holding a worktree of it); a path that does not exist when neither."""
from pathlib import Path

_HERE = Path(__file__).resolve()
SHARED = next((p / "shared" for p in (_HERE.parents[2], _HERE.parents[3])
               if (p / "shared").is_dir()), _HERE.parents[1] / "no-shared-dir")
