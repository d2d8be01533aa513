"""The similarity of two diffs and how the config keys they change compare."""

from __future__ import annotations

from srez_daemon.record.patch_keys import KeyComparison, compare_keys, key_changes
from srez_daemon.record.world import similarity

HEAD = "--- a/auth/auth.conf\n+++ b/auth/auth.conf\n"


def change(key: str, old: str, new: str, line: int = 14) -> str:
    return f"{HEAD}@@ -{line - 1},3 +{line - 1},3 @@\n [db]\n-{key} = {old}\n+{key} = {new}\n host = x\n"


def test_an_equivalent_fix_with_another_value_is_same_key_other_value() -> None:
    reference = change("pool_max", "8", "20")
    agent = change("pool_max", "8", "27")
    sim = similarity(agent, reference)
    assert round(sim.similarity, 2) == 0.33  # only the removed line is common
    assert (sim.same_keys, sim.other_values, sim.agent_only_keys, sim.reference_only_keys) == (
        0,
        1,
        0,
        0,
    )
    alike = similarity(reference, reference)
    assert (alike.similarity, alike.same_keys, alike.other_values) == (1.0, 1, 0)


def test_keys_are_told_apart_by_their_line_in_the_old_file() -> None:
    # the same key name in two sections is two keys: changing one is not changing the other
    reference = change("port", "15433", "15432", line=14)
    agent = change("port", "15433", "15432", line=30)
    assert compare_keys(agent, reference) == KeyComparison(0, 0, 1, 1)
    assert compare_keys(reference, reference) == KeyComparison(1, 0, 0, 0)


def test_added_and_removed_keys_and_whitespace() -> None:
    patch = (
        f"{HEAD}@@ -5,2 +5,3 @@\n keep = 1\n-gone = 2\n+new_key =  3 \n+[extra]\n"
        "--- /dev/null\n+++ b/cache/new.conf\n@@ -0,0 +1 @@\n+a = 1\n"
    )
    assert key_changes(patch) == {
        ("auth/auth.conf", 6, "gone"): None,
        ("auth/auth.conf", 7, "new_key"): "3",
        ("auth/auth.conf", 7, "[extra]"): "[extra]",
        ("cache/new.conf", 0, "a"): "1",
    }
    assert compare_keys("", patch) == KeyComparison(0, 0, 0, 4)
    assert compare_keys("", "") == KeyComparison(0, 0, 0, 0)
