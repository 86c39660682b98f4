"""The runnable examples of docs/ run, and say what they print."""
import pathlib
import re

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"


def _python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), re.S)


def test_the_embedding_example_drives_a_day_of_events(capsys):
    (code,) = _python_blocks("embedding.md")
    exec(compile(code, "docs/embedding.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("noon: ") and "ended NODE_FAIL" in out[0]
    assert out[-1].startswith("started 400 jobs")


def test_the_api_reference_is_current():
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_api", DOCS / "make_api.py")
    make_api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_api)
    assert (DOCS / "api.md").read_text() == make_api.render(), \
        "docs/api.md is stale: run python docs/make_api.py"


def test_the_index_links_every_page():
    index = (DOCS / "index.md").read_text()
    pages = {p.name for p in DOCS.glob("*.md")} - {"index.md"}
    assert pages <= set(re.findall(r"\]\(([\w-]+\.md)\)", index))
