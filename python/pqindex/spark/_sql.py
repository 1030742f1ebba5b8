"""Spark SQL condition text read into the skeleton of ``_condition``.

Only the prunable part of Spark's grammar is read: AND, OR, NOT (``!``), comparisons
(``=``, ``==``, ``<>``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``<=>``), ``[NOT] BETWEEN``,
``[NOT] IN (...)``, ``[NOT] LIKE ... [ESCAPE ...]``, ``IS [NOT] NULL`` and bare boolean
columns, between a column (``a``, ``a.b``, backticks) and a literal. A literal is kept as
its text: numbers with any suffix, strings (adjacent strings, raw ``r'...'``, ``X'...'``),
``TRUE``/``FALSE``/``NULL``, typed literals (``DATE '...'``, ``TIMESTAMP '...'``, ...) and
``CAST(<literal> AS <type>)``.

The reading does not need to be right, only checkable: ``_client_filters`` renders it back
and keeps it only if Spark analyses the rendering to the same plan as the text.
"""

from __future__ import annotations

from dataclasses import dataclass

from pqindex.spark._condition import (
    AndNode,
    Between,
    BoolRef,
    Cmp,
    Condition,
    Conjunct,
    InList,
    IsNull,
    Like,
    Lit,
    Node,
    NotNode,
    NotUnderstood,
    OrNode,
    Ref,
    StringFn,
)

_OPERATORS = ("<=>", "<=", ">=", "<>", "!=", "==", "=", "<", ">", "(", ")", ",", ".", "-", "+")
_COMPARISONS = {"=": "=", "==": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<="}
_COMPARISONS |= {">": ">", ">=": ">=", "<=>": "<=>"}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_TYPED_LITERALS = {"DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ"}
_KEYWORDS = {"AND", "OR", "NOT", "IN", "IS", "NULL", "LIKE", "BETWEEN", "ESCAPE", "TRUE"}
_KEYWORDS |= {"FALSE", "CASE", "WHEN", "THEN", "ELSE", "END", "AS", "CAST"}


@dataclass(frozen=True)
class Token:
    kind: str  # ident, quoted (backticked identifier), number, string, op, other, end
    text: str  # the identifier's name, else the source text
    start: int
    end: int

    def word(self) -> str:
        """The upper-cased word of an unquoted identifier ("" for anything else)."""
        return self.text.upper() if self.kind == "ident" else ""


def tokenize(text: str) -> list[Token]:
    """Spark SQL tokens with their source offsets; what is not understood becomes an
    ``other`` token (which no rule accepts)."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c in "'\"" or (c in "rRxX" and text[i + 1 : i + 2] in ("'", '"')):
            start, prefixed = i, c not in "'\""
            i = _string_end(text, i + prefixed, raw=c in "rR")
            tokens.append(Token("string", text[start:i], start, i))
        elif c == "`":
            start, name, i = i, "", i + 1
            while i < n:
                if text[i] == "`":
                    if text[i + 1 : i + 2] != "`":
                        break
                    i += 1
                name += text[i]
                i += 1
            i += 1
            tokens.append(Token("quoted" if i <= n else "other", name, start, i))
        elif c.isdigit() or (c == "." and text[i + 1 : i + 2].isdigit()):
            start = i
            i = _number_end(text, i)
            tokens.append(Token("number", text[start:i], start, i))
        elif c.isalpha() or c == "_":
            start = i
            while i < n and (text[i].isalnum() or text[i] == "_"):
                i += 1
            tokens.append(Token("ident", text[start:i], start, i))
        else:
            op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
            if op is None:
                tokens.append(Token("other", c, i, i + 1))
                i += 1
            else:
                tokens.append(Token("op", op, i, i + len(op)))
                i += len(op)
    tokens.append(Token("end", "", n, n))
    return tokens


def _string_end(text: str, i: int, raw: bool) -> int:
    """The offset after the string literal whose opening quote is at ``i`` (backslash
    escapes a character unless the literal is raw)."""
    quote = text[i]
    i += 1
    while i < len(text):
        if text[i] == "\\" and not raw:
            i += 2
            continue
        if text[i] == quote:
            return i + 1
        i += 1
    return len(text) + 1  # unterminated: the parser refuses what follows


def _number_end(text: str, i: int) -> int:
    n = len(text)
    while i < n and (text[i].isdigit() or text[i] == "."):
        i += 1
    if i < n and text[i] in "eE":
        j = i + 1 + (text[i + 1 : i + 2] in ("+", "-"))
        if j < n and text[j].isdigit():
            i = j
            while i < n and text[i].isdigit():
                i += 1
    while i < n and (text[i].isalnum() or text[i] == "_"):  # L, S, Y, D, F, BD suffixes
        i += 1
    return i


def parse(text: str) -> Condition:
    """The conjuncts of ``text``, each read or left opaque, and its literals' texts."""
    tokens = tokenize(text)
    literals: list[str] = []
    conjuncts = []
    for start, end in _flatten(tokens, 0, len(tokens) - 1):
        original = text[tokens[start].start : tokens[end - 1].end] if end > start else ""
        parser = _Parser(text, [*tokens[start:end], Token("end", "", 0, 0)], len(literals))
        try:
            node = parser.condition()
            literals.extend(parser.literals)
        except NotUnderstood:
            node = None
        conjuncts.append(Conjunct(node, original))
    return Condition(tuple(conjuncts), tuple(literals))


def _flatten(tokens: list[Token], start: int, end: int) -> list[tuple[int, int]]:
    """The conjuncts of ``tokens[start:end]``, looking inside a conjunct that is one pair of
    parentheses (``((a AND b) AND c)``, as Spark prints conditions)."""
    out = []
    for a, b in split_conjuncts([*tokens[start:end], Token("end", "", 0, 0)]):
        a, b = a + start, b + start
        if b - a > 2 and _matching(tokens, a) == b - 1:
            out.extend(_flatten(tokens, a + 1, b - 1))
        else:
            out.append((a, b))
    return out


def _matching(tokens: list[Token], i: int) -> int:
    """The index of the parenthesis closing the one at ``i`` (-1 if ``i`` opens none)."""
    if tokens[i].kind != "op" or tokens[i].text != "(":
        return -1
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j].kind == "op" and tokens[j].text in "()":
            depth += 1 if tokens[j].text == "(" else -1
            if depth == 0:
                return j
    return -1


def split_conjuncts(tokens: list[Token]) -> list[tuple[int, int]]:
    """Token ranges of the top-level conjuncts: split at each AND outside parentheses and
    CASE ... END that does not close a BETWEEN."""
    ranges, start, depth, between = [], 0, 0, 0
    for i, t in enumerate(tokens):
        word = t.word()
        if (t.text == "(" and t.kind == "op") or word == "CASE":
            depth += 1
        elif (t.text == ")" and t.kind == "op") or word == "END":
            depth -= 1
        elif depth == 0 and word == "BETWEEN":
            between += 1
        elif depth == 0 and word == "AND":
            if between:
                between -= 1
            else:
                ranges.append((start, i))
                start = i + 1
        elif t.kind == "end":
            ranges.append((start, i))
    return ranges


class _Parser:
    """Recursive descent over one conjunct's tokens; raises NotUnderstood."""

    def __init__(self, text: str, tokens: list[Token], first_literal: int) -> None:
        self.text = text
        self.tokens = tokens
        self.i = 0
        self.first_literal = first_literal
        self.literals: list[str] = []

    def peek(self, offset: int = 0) -> Token:
        return self.tokens[min(self.i + offset, len(self.tokens) - 1)]

    def next(self) -> Token:
        t = self.peek()
        self.i += 1
        return t

    def accept_word(self, *words: str) -> bool:
        if self.peek().word() in words:
            self.i += 1
            return True
        return False

    def expect_op(self, op: str) -> None:
        t = self.next()
        if t.kind != "op" or t.text != op:
            raise NotUnderstood(t.text)

    def condition(self) -> Node:
        node = self.disjunction()
        if self.peek().kind != "end":
            raise NotUnderstood(self.peek().text)
        return node

    def disjunction(self) -> Node:
        node = self.conjunction()
        while self.accept_word("OR"):
            node = OrNode(node, self.conjunction())
        return node

    def conjunction(self) -> Node:
        node = self.negation()
        while self.accept_word("AND"):
            node = AndNode(node, self.negation())
        return node

    def negation(self) -> Node:
        if self.accept_word("NOT"):
            return NotNode(self.negation())
        if self.peek().kind == "other" and self.peek().text == "!":
            self.i += 1
            return NotNode(self.negation())
        return self.predicate()

    def predicate(self) -> Node:
        t = self.peek()
        if t.kind == "op" and t.text == "(":
            self.i += 1
            node = self.disjunction()
            self.expect_op(")")
            return node
        if t.word() in ("STARTSWITH", "ENDSWITH", "CONTAINS", "BETWEEN") and (
            self.peek(1).text == "("
        ):
            return self.function_form(t.word())
        left = self.operand()
        t = self.peek()
        if t.kind == "op" and t.text in _COMPARISONS:
            self.i += 1
            right = self.operand()
            op = _COMPARISONS[t.text]
            if isinstance(left, Ref) and isinstance(right, Lit):
                return Cmp(op, left, right)
            if isinstance(left, Lit) and isinstance(right, Ref):
                return Cmp(_FLIPPED.get(op, op), right, left, literal_first=True)
            raise NotUnderstood(t.text)
        if not isinstance(left, Ref):
            raise NotUnderstood(t.text)
        negated = self.accept_word("NOT")
        if self.accept_word("BETWEEN"):
            low = self.literal()
            if not self.accept_word("AND"):
                raise NotUnderstood(self.peek().text)
            return Between(left, low, self.literal(), negated)
        if self.accept_word("IN"):
            self.expect_op("(")
            items = [self.literal()]
            while self.peek().kind == "op" and self.peek().text == ",":
                self.i += 1
                items.append(self.literal())
            self.expect_op(")")
            return InList(left, tuple(items), negated)
        if self.accept_word("LIKE"):
            pattern = self.literal()
            escape = self.literal() if self.accept_word("ESCAPE") else None
            return Like(left, pattern, escape, negated)
        if negated:
            raise NotUnderstood("NOT")
        if self.accept_word("IS"):
            negated = self.accept_word("NOT")
            if not self.accept_word("NULL"):
                raise NotUnderstood(self.peek().text)
            return IsNull(left, negated)
        return BoolRef(left)

    def function_form(self, name: str) -> Node:
        """``startswith(ref, lit)`` (``endswith``, ``contains``) and ``between(ref, lo, hi)``,
        as Spark prints them."""
        self.i += 1
        self.expect_op("(")
        ref = self.reference()
        args = []
        while self.peek().kind == "op" and self.peek().text == ",":
            self.i += 1
            args.append(self.literal())
        self.expect_op(")")
        if name in ("STARTSWITH", "ENDSWITH", "CONTAINS") and len(args) == 1:
            return StringFn(name.lower(), ref, args[0])
        if name == "BETWEEN" and len(args) == 2:
            return Between(ref, args[0], args[1])
        raise NotUnderstood(name)

    def operand(self) -> Ref | Lit:
        t = self.peek()
        is_name = t.kind == "quoted" or (t.kind == "ident" and t.word() not in _KEYWORDS)
        if is_name and not self._typed_literal(t) and self.peek(1).text != "(":
            return self.reference()
        return self.literal()

    def reference(self) -> Ref:
        path = [self.name()]
        while self.peek().kind == "op" and self.peek().text == ".":
            self.i += 1
            path.append(self.name())
        return Ref(tuple(path))

    def name(self) -> str:
        t = self.next()
        if t.kind == "quoted" or (t.kind == "ident" and t.word() not in _KEYWORDS):
            return t.text
        raise NotUnderstood(t.text)

    def _typed_literal(self, t: Token) -> bool:
        return t.word() in _TYPED_LITERALS and self.peek(1).kind == "string"

    def literal(self) -> Lit:
        start = self.peek()
        t = self.next()
        if t.kind == "op" and t.text in ("-", "+"):
            t = self.next()
            if t.kind != "number":
                raise NotUnderstood(t.text)
        elif t.kind == "string":
            while self.peek().kind == "string":  # 'a' 'b' is the string 'ab'
                t = self.next()
        elif t.word() in _TYPED_LITERALS and self.peek().kind == "string":
            t = self.next()
        elif t.word() == "CAST":
            self.expect_op("(")
            self.literal()
            self.literals.pop()  # the cast as a whole is the literal
            if not self.accept_word("AS"):
                raise NotUnderstood(self.peek().text)
            depth = 1
            while depth:
                t = self.next()
                if t.kind == "end":
                    raise NotUnderstood("CAST")
                if t.kind == "op" and t.text in "()":
                    depth += 1 if t.text == "(" else -1
        elif not (t.kind == "number" or t.word() in ("TRUE", "FALSE", "NULL")):
            raise NotUnderstood(t.text)
        self.literals.append(self.text[start.start : t.end])
        return Lit(self.first_literal + len(self.literals) - 1)
