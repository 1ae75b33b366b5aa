"""YAML as kmedic reads its configs: safe, and a key given twice in one mapping is an error.

PyYAML keeps the last of two equal keys without a word, so a second ``policy:`` block appended
to a manager config silently replaces every safety setting of the first. Here that is a
``DuplicateKeyError`` naming the key and both lines (1-based, as an editor shows them).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode


class DuplicateKeyError(yaml.YAMLError):
    def __init__(self, key: Any, first_line: int, second_line: int) -> None:
        self.key, self.first_line, self.second_line = key, first_line, second_line
        super().__init__(
            f"key {key!r} is given twice, on line {first_line} and on line {second_line} "
            "(the second would silently replace the first)"
        )


class _StrictLoader(yaml.SafeLoader):
    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<:` merges are PyYAML's own business
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: PyYAML's own error follows
                continue
            if first is not None:
                raise DuplicateKeyError(key, first, line)
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def load(text: str) -> Any:
    """``yaml.safe_load`` that refuses duplicate keys at every level."""
    return yaml.load(text, Loader=_StrictLoader)
