"""Structured outputs: the constraints of SamplingParams and their compiled
grammars (vt.Grammar, vt_grammar.h).

A constraint is given either as vLLM's StructuredOutputsParams
(``SamplingParams(structured_outputs=vt.StructuredOutputsParams(json=...))``)
or through SamplingParams' own keywords (json_schema=, grammar=, regex=,
choice=, json_object=). Either way it comes down to a Constraint: a kind of
vt.Grammar and its source text, or a vt.Grammar compiled already. An LLM
compiles each distinct Constraint once (GrammarCache) and gives every request
a sampler chain whose first stage is that grammar.
"""
from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple, Union

from . import _vt

__all__ = ["StructuredOutputsParams"]

# (kind, source): kind is a keyword of vt.Grammar ("gbnf", "json_schema",
# "json", "regex", "choice") and source its text (a JSON array for choice,
# "" for json). Hashable, so that equal constraints share one compilation.
ConstraintKey = Tuple[str, str]
Constraint = Union[ConstraintKey, _vt.Grammar]

JsonSchema = Union[str, Dict[str, Any], bool]


@dataclass
class StructuredOutputsParams:
    """A constraint on the generated text, as vLLM's StructuredOutputsParams.

    Give exactly one of:
        json: a JSON Schema (a dict, or its JSON text); the output is one
            JSON value valid against it.
        regex: a regular expression the whole output matches.
        choice: a list of strings; the output is one of them.
        grammar: a GBNF grammar (llama.cpp's; start rule root), or a
            vt.Grammar compiled already.
        json_object: True for any JSON value (OpenAI's
            response_format={"type": "json_object"}).

    Pass it as ``vt.SamplingParams(structured_outputs=...)``. vLLM's other
    fields (backend, whitespace_pattern, disable_* ...) are not taken.
    Raises vt.VtInvalidArgument unless exactly one constraint is given.
    """

    json: Optional[JsonSchema] = None
    regex: Optional[str] = None
    choice: Optional[List[str]] = None
    grammar: Union[str, _vt.Grammar, None] = None
    json_object: bool = False

    def __post_init__(self) -> None:
        found = constraints(json_schema=self.json, regex=self.regex, choice=self.choice,
                            grammar=self.grammar, json_object=self.json_object)
        if len(found) != 1:
            raise _vt.VtInvalidArgument(
                "StructuredOutputsParams: give exactly one of json, regex, choice, grammar or "
                f"json_object=True ({len(found)} given)")
        if self.choice is not None:
            self.choice = list(self.choice)

    def _constraint(self) -> Constraint:
        """The one constraint, as a (kind, source) key or a vt.Grammar."""
        return constraints(json_schema=self.json, regex=self.regex, choice=self.choice,
                           grammar=self.grammar, json_object=self.json_object)[0]


def constraints(*, json_schema: Optional[JsonSchema], regex: Optional[str], choice: Optional[List[str]],
                grammar: Union[str, _vt.Grammar, None], json_object: bool) -> List[Constraint]:
    """Every constraint given (checked for type), each as a Constraint."""
    out: List[Constraint] = []
    if json_schema is not None:
        if isinstance(json_schema, str):
            out.append(("json_schema", json_schema))
        elif isinstance(json_schema, (dict, bool)):
            # Property order is part of a schema's meaning here (properties
            # are generated in it): no sort_keys.
            out.append(("json_schema", json.dumps(json_schema, ensure_ascii=False)))
        else:
            raise TypeError(f"json_schema must be a dict or JSON text, not {type(json_schema).__name__}")
    if regex is not None:
        if not isinstance(regex, str):
            raise TypeError(f"regex must be a str, not {type(regex).__name__}")
        out.append(("regex", regex))
    if choice is not None:
        if isinstance(choice, str) or not all(isinstance(c, str) for c in choice):
            raise TypeError("choice must be a list of str")
        out.append(("choice", json.dumps(list(choice), ensure_ascii=False)))
    if grammar is not None:
        if isinstance(grammar, _vt.Grammar):
            out.append(grammar)
        elif isinstance(grammar, str):
            out.append(("gbnf", grammar))
        else:
            raise TypeError(f"grammar must be GBNF text or a vt.Grammar, not {type(grammar).__name__}")
    if json_object:
        out.append(("json", ""))
    return out


def compile_constraint(tokenizer: _vt.Tokenizer, key: ConstraintKey) -> _vt.Grammar:
    kind, source = key
    if kind == "json":
        return _vt.Grammar(tokenizer, json=True)
    if kind == "choice":
        return _vt.Grammar(tokenizer, choice=json.loads(source))
    return _vt.Grammar(tokenizer, **{kind: source})


class GrammarCache:
    """The grammars of one tokenizer's constraints, each compiled once.

    Keeps the `size` most recently used ones (compiling a JSON Schema takes
    milliseconds; a generate() call with one schema for every prompt
    compiles it once). A vt.Grammar given as is passes through, after a
    check that it was compiled for a vocabulary of this size. Not
    thread-safe: its LLM's lock guards it.
    """

    def __init__(self, tokenizer: _vt.Tokenizer, size: int = 32) -> None:
        self.tokenizer = tokenizer
        self.size = size
        self._grammars: "OrderedDict[ConstraintKey, _vt.Grammar]" = OrderedDict()

    def get(self, constraint: Optional[Constraint]) -> Optional[_vt.Grammar]:
        if constraint is None:
            return None
        if isinstance(constraint, _vt.Grammar):
            if constraint.n_vocab != self.tokenizer.n_vocab:
                raise _vt.VtInvalidArgument(
                    f"{constraint!r} was compiled for a vocabulary of {constraint.n_vocab} tokens, "
                    f"not this model's {self.tokenizer.n_vocab}")
            return constraint
        g = self._grammars.get(constraint)
        if g is not None:
            self._grammars.move_to_end(constraint)
            return g
        g = compile_constraint(self.tokenizer, constraint)  # raises on a bad constraint: nothing cached
        self._grammars[constraint] = g
        if len(self._grammars) > self.size:
            self._grammars.popitem(last=False)
        return g

    def __len__(self) -> int:
        return len(self._grammars)
