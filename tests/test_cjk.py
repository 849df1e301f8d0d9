"""Chinese, Japanese and Korean text: words inside a sentence are found (index.text.cjk_parts).

unicode61 makes one token of a whole run of CJK characters, so before the bigrams in `parts`
`search 安装` found nothing in `使用pip安装本软件` and `match` said no document held it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from index.store import Store
from index.text import cjk_parts, cjk_pieces, derived_parts, has_cjk, identifier_parts
from tests.conftest import run_cli, write

TREE = {
    "zh.md": "# 安装指南\n\n使用pip安装本软件。配置连接池超时时间。中文搜索引擎很好用。\n",
    "ja.md": "# インストール\n\nこのソフトウェアはpipでインストールします。"
    "接続プールのタイムアウトを設定する。\n",
    "ko.md": "# 설치\n\n연결풀의 시간제한을 설정합니다.\n",
    "pool.md": "# Connection pool\n\nThe pool keeps connections open. Set a pool timeout.\n",
    "timeouts.md": "# Timeouts\n\nA timeout for every request: connect, read, write, pool.\n",
    "client.md": "# Client\n\nThe client sends requests through its connection pool.\n",
}
# A word inside a sentence -> the one document holding it.
WORDS = {
    "安装": "zh.md",  # install: in the title and inside the body's first clause
    "连接池": "zh.md",  # connection pool: mid-clause
    "超时时间": "zh.md",
    "搜索引擎": "zh.md",
    "池": "zh.md",  # one character
    "タイムアウト": "ja.md",  # timeout, katakana inside a clause
    "インストール": "ja.md",
    "接続プール": "ja.md",
    "설정": "ko.md",  # a Hangul word with its ending glued on
    "시간제한": "ko.md",
}


def _ingest(root: Path, store: str) -> None:
    done = run_cli("ingest", "--root", root, "--store", store, "-q")
    assert done.code == 0, done.stderr


def _sources(store: str, query: str) -> list[str]:
    found = run_cli("search", query, "--store", store, "--json")
    assert found.code == 0, found.stderr
    return [hit["source"] for hit in json.loads(found.stdout)]


def _matched(store: str, *words: str) -> list[str]:
    found = run_cli("match", *words, "--store", store, "--json")
    assert found.code == 0, found.stderr
    return [doc["source"] for doc in json.loads(found.stdout)]


def test_words_inside_cjk_sentences_are_searched_and_matched(store_url, tmp_path):
    write(tmp_path / "docs", TREE)
    _ingest(tmp_path / "docs", store_url)
    for word, source in WORDS.items():
        assert _sources(store_url, word)[:1] == [source], word
        assert _matched(store_url, word) == [source], word
        assert _matched(store_url, "--exact", word) == [source], word
    # A question written without spaces finds the page with its words.
    assert _sources(store_url, "如何配置连接池")[:1] == ["zh.md"]
    # Latin glued to CJK (`使用pip安装`, `pipでインストール`) is a word of its own too.
    assert set(_matched(store_url, "pip")) == {"zh.md", "ja.md"}
    assert _matched(store_url, "pip安装") == ["zh.md"]
    # Words of one sentence, apart, are not a phrase: 安装 and 连接 are both in zh.md, but
    # 装连 is not there (the bigrams of two runs never join).
    assert _matched(store_url, "装连接") == []
    assert _matched(store_url, "安装", "-连接池") == []


def test_the_page_with_the_word_outranks_one_titled_with_a_piece_of_it(tmp_path):
    filler = "# 文档{0}\n\n这是第{0}篇文档，讲的是日志和缓存的配置。\n"
    fillers = {f"f{i}.md": filler.format(i) for i in range(12)}
    write(tmp_path / "docs", {
        **fillers,
        "faq.md": "# 常见问题\n\n这里有很多问题。有人问到连接池的事情，也有人问到别的。\n",
        "connect.md": "# 连接\n\n客户端打开连接。连接会被复用。\n",
    })  # fmt: skip
    _ingest(tmp_path / "docs", str(tmp_path / "store"))
    # 连接 (connection) is the whole title of connect.md and a piece of 连接池 (connection
    # pool): asked for 连接池, the page that says it comes first.
    assert _sources(str(tmp_path / "store"), "连接池")[:2] == ["faq.md", "connect.md"]
    assert _sources(str(tmp_path / "store"), "连接")[0] == "connect.md"


def _as_before_cjk(monkeypatch) -> None:
    """Load as the version before the CJK bigrams did: identifier parts only."""
    monkeypatch.setattr(
        "index.loader.derived_parts",
        lambda title, section, symbol, body: identifier_parts(" ".join((title, symbol, body))),
    )


def test_latin_queries_rank_as_before_in_a_store_with_cjk(tmp_path, monkeypatch):
    write(tmp_path / "docs", TREE)
    new, old = str(tmp_path / "new"), str(tmp_path / "old")
    _ingest(tmp_path / "docs", new)
    with monkeypatch.context() as patched:
        _as_before_cjk(patched)
        _ingest(tmp_path / "docs", old)
    for query in ("connection pool", "timeout", "client requests", "open connections"):
        assert _sources(new, query) == _sources(old, query), query


def test_an_older_store_is_read_as_it_is_then_upgraded(store_url, tmp_path, monkeypatch):
    write(tmp_path / "docs", TREE)
    with monkeypatch.context() as patched:
        _as_before_cjk(patched)
        _ingest(tmp_path / "docs", store_url)
    with Store.open(store_url) as store, store.write():  # as the previous version left it
        store.db.execute("DELETE FROM schema_migrations WHERE name = 'm007_cjk_parts'")
    # A reader reads it as it is: only whole runs are words there.
    assert _sources(store_url, "连接池") == []
    assert _sources(store_url, "安装指南") == ["zh.md"]
    with Store.open(store_url) as store:  # a writer applies m007
        applied = {name for (name,) in store.db.execute("SELECT name FROM schema_migrations")}
    assert "m007_cjk_parts" in applied
    for word, source in WORDS.items():
        assert _sources(store_url, word)[:1] == [source], word
    # The same as a store loaded now: the next load finds every document unchanged.
    again = run_cli("ingest", "--root", tmp_path / "docs", "--store", store_url)
    assert again.code == 0 and f"{len(TREE)} unchanged" in again.stdout + again.stderr
    fresh = str(tmp_path / "fresh")
    _ingest(tmp_path / "docs", fresh)
    for query in ("连接池", "タイムアウト", "connection pool"):
        assert _sources(store_url, query) == _sources(fresh, query), query


# --- the derivation itself -------------------------------------------------------------------

CJK_CHARS = st.sampled_from("安装连接池超时の設定タイムアウトーｶﾀ설정합니다々〇𠀋")
TEXT = st.text(st.one_of(CJK_CHARS, st.characters(), st.sampled_from(" 。、,.pip_Ab1")))


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_every_cjk_character_is_in_the_parts_and_latin_text_adds_none(text):
    parts = cjk_parts(text)
    if not has_cjk(text):
        assert parts == ""
        assert derived_parts(text, text, "", text) == identifier_parts(f"{text}  {text}")
        return
    for char in text:
        if has_cjk(char) and (char.isalnum() or char == "ー"):  # a letter, as tokens hold
            assert char in parts


@settings(max_examples=300, deadline=None)
@given(st.lists(CJK_CHARS, min_size=1, max_size=12).map("".join), st.data())
def test_a_word_cut_from_a_run_is_asked_as_the_run_indexes_it(run, data):
    start = data.draw(st.integers(0, len(run) - 1))
    end = data.draw(st.integers(start + 1, len(run)))
    word = run[start:end]
    [(asked, written)] = cjk_pieces(word)
    assert written == word
    indexed = f" {cjk_parts(f'前言。{run}。后记')} "
    assert f" {asked} " in indexed  # the bigrams in sequence (or the character or pair itself)


def test_pieces_of_a_mixed_word():
    assert cjk_pieces("connection") is None
    assert cjk_pieces("pip安装") == [("pip", "pip"), ("安装", "安装")]
    assert cjk_pieces("タイムアウト") == [("タイ イム ムア アウ ウト", "タイムアウト")]
    assert cjk_parts("接続プール") == "接続 続プ プー ール 接 続 プ ー ル"


@pytest.mark.parametrize("text", ["", "plain ascii", "Ünïcödé Latin — text", "getUserName"])
def test_text_without_cjk_has_the_parts_it_had(text):
    assert derived_parts(text, "Sec", "sym", text) == identifier_parts(f"{text} sym {text}")
