"""The seed's knowledge and retriever acceptance checks (spec §15.9 and §15.10), ported
to both stores, with the seed's bugs fixed where the spec marks them."""

from __future__ import annotations

import pytest

from agcore_actors.memory import (
    InvalidInput,
    KnowledgePage,
    NotFound,
    RetrievalMode,
    RetrieverConfig,
)
from agcore_actors.memory.embeddings import WordLlamaEmbedder
from agcore_actors.memory.lowlevel import (
    KnowledgeStore,
    MemoryBackend,
    MemoryRetriever,
)
from agcore_actors.memory.policy import extract_keywords, text_overlap_dice, text_overlap_score
from tests.memory.helpers import FakeClock

# -- §15.9 knowledge --------------------------------------------------------------


def make_page(id: str, title: str, tags: list[str]) -> KnowledgePage:
    return KnowledgePage(
        id=id,
        title=title,
        summary=f"summary of {title}",
        content=f"full content of {title}",
        tags=tags,
    )


def test_add_get_delete_page(store: MemoryBackend) -> None:
    ks = KnowledgeStore(store)
    ks.add_page(make_page("p1", "LangGraph", ["langgraph", "framework"]))
    page = ks.get_page("p1")
    assert page is not None and page.title == "LangGraph"
    assert page.created_at is not None and page.updated_at is not None
    assert ks.delete_page("p1") is True
    assert ks.get_page("p1") is None


def test_add_page_rejects_empty_id(store: MemoryBackend) -> None:
    with pytest.raises(InvalidInput):
        KnowledgeStore(store).add_page(make_page("", "x", []))
    assert store.count() == 0


def test_update_page_requires_existing(store: MemoryBackend) -> None:
    ks = KnowledgeStore(store)
    ks.add_page(make_page("nope1", "x", []))  # a page whose id merely starts alike
    with pytest.raises(NotFound):
        ks.update_page(make_page("nope", "x", []))


def test_update_keeps_created_at_and_order(store: MemoryBackend, clock: FakeClock) -> None:
    ks = KnowledgeStore(store)
    first = ks.add_page(make_page("p1", "One", []))
    clock.advance(5)
    ks.add_page(make_page("p2", "Two", []))
    clock.advance(5)
    updated = ks.update_page(make_page("p1", "One, revised", []))
    assert updated.created_at == first.created_at
    assert updated.updated_at == clock.now
    assert [e.id for e in ks.get_index()] == ["p1", "p2"]


def test_search_finds_by_title_summary_tag_and_content(store: MemoryBackend) -> None:
    ks = KnowledgeStore(store)
    ks.add_page(make_page("p1", "LangGraph StateGraph", ["llm"]))
    ks.add_page(make_page("p2", "Other", ["knowledge-graph"]))
    ks.add_page(make_page("p3", "Third", ["unrelated"]))
    ks.add_page(KnowledgePage(id="p4", title="Fourth", content="The borrow checker rejects this"))
    assert [p.id for p in ks.search("stategraph")] == ["p1"]
    assert [p.id for p in ks.search("knowledge-graph")] == ["p2"]
    assert ks.search("nonexistent") == []
    assert [p.id for p in ks.search("BORROW checker")] == ["p4"]  # content (seed: not searched)
    assert ks.search("") == []


def test_get_index_returns_all_pages(store: MemoryBackend) -> None:
    ks = KnowledgeStore(store)
    ks.add_page(make_page("p1", "A", []))
    ks.add_page(make_page("p2", "B", []))
    assert [e.id for e in ks.get_index()] == ["p1", "p2"]


def test_index_cannot_drift_from_the_store(store: MemoryBackend) -> None:
    # The seed's rebuild_index test: its in-memory index drifted from the
    # store. Here the store is the index; a second KnowledgeStore over the
    # same store (or a restart) sees every page at once.
    KnowledgeStore(store).add_page(make_page("p1", "A", []))
    KnowledgeStore(store).add_page(make_page("p2", "B", []))
    other = KnowledgeStore(store)
    assert len(other.get_index()) == 2
    assert other.rebuild_index() == 2


# -- §15.10 retriever -------------------------------------------------------------


def page(id: str, title: str, summary: str, content: str) -> KnowledgePage:
    return KnowledgePage(id=id, title=title, summary=summary, content=content)


DICE = RetrieverConfig(mode=RetrievalMode.DICE)


def test_retrieve_empty_query(store: MemoryBackend, embedder: WordLlamaEmbedder) -> None:
    KnowledgeStore(store).add_page(page("p1", "LangGraph", "framework", "agent runtime"))
    for mode in RetrievalMode:
        retriever = MemoryRetriever(store, RetrieverConfig(mode=mode), embedder=embedder)
        assert retriever.retrieve("").items == []


def test_retrieve_finds_relevant_page_with_the_seeds_score(store: MemoryBackend) -> None:
    ks = KnowledgeStore(store)
    ks.add_page(
        page(
            "p1",
            "LangGraph StateGraph",
            "state management",
            "LangGraph uses StateGraph for state machines",
        )
    )
    ks.add_page(page("p2", "Other", "unrelated", "nothing matching"))
    result = MemoryRetriever(store, DICE).retrieve("LangGraph state")
    assert result.query == "LangGraph state"
    assert [i.page.id for i in result.items] == ["p1"]
    # Unique character bigrams: title 12 shared of 14 + 15, summary 5 of
    # 14 + 15, content 14 of 14 + 34.
    expected = 0.5 * (24 / 29) + 0.3 * (10 / 29) + 0.2 * (28 / 48)
    assert result.items[0].score == pytest.approx(expected, abs=1e-12)
    assert round(result.items[0].score, 4) == 0.6339


def test_retrieve_respects_min_score(store: MemoryBackend) -> None:
    KnowledgeStore(store).add_page(page("p1", "X", "Y", "Z"))
    config = RetrieverConfig(mode=RetrievalMode.DICE, min_score=0.99, max_results=10)
    assert MemoryRetriever(store, config).retrieve("totally unrelated content").items == []
    p = page("x", "X", "Y", "Z")
    assert text_overlap_score("totally unrelated content", p) == 0.0


def test_retrieve_respects_max_results(store: MemoryBackend) -> None:
    ks = KnowledgeStore(store)
    for i in range(5):
        ks.add_page(page(f"p{i}", "LangGraph", "framework", "agent runtime"))
    config = RetrieverConfig(mode=RetrievalMode.DICE, max_results=2, min_score=0.0)
    result = MemoryRetriever(store, config).retrieve("LangGraph")
    assert [i.page.id for i in result.items] == ["p0", "p1"]  # ties keep discovery order
    assert all(i.score == pytest.approx(0.5 + 0.3 * 0.125) for i in result.items)
    assert round(result.items[0].score, 4) == 0.5375


def test_text_overlap_dice_zero_on_empty() -> None:
    assert text_overlap_dice("hello", "") == 0.0
    assert text_overlap_dice("", "hello") == 0.0


def test_text_overlap_dice_identical() -> None:
    assert text_overlap_dice("hello world", "hello world") == pytest.approx(1.0, abs=1e-3)


def test_scoring_is_case_sensitive_like_the_seed() -> None:
    assert text_overlap_dice("langgraph", "LangGraph") == pytest.approx(0.625)


def test_extract_keywords_filters_stop_words() -> None:
    keywords = extract_keywords("the quick brown fox is fast")
    assert "the" not in keywords and "is" not in keywords
    assert "quick" in keywords and "brown" in keywords


def test_extract_keywords_filters_single_chars() -> None:
    keywords = extract_keywords("a b c dog")
    assert "a" not in keywords and "b" not in keywords and "dog" in keywords


def test_cjk_queries_are_bigrams_not_one_token() -> None:
    # Seed: "知识图谱设计" was one keyword that had to appear verbatim.
    assert extract_keywords("知识图谱设计") == ["知识", "识图", "图谱", "谱设", "设计"]
    full_width_comma = "\uff0c"
    assert extract_keywords(f"Rust语言{full_width_comma}设计") == ["rust", "语言", "设计"]


@pytest.mark.parametrize("mode", list(RetrievalMode))
def test_cjk_query_finds_a_page_sharing_a_word(
    store: MemoryBackend, mode: RetrievalMode, embedder: WordLlamaEmbedder
) -> None:
    ks = KnowledgeStore(store)
    ks.add_page(page("kg", "知识图谱", "实体与关系", "知识图谱用于表示实体之间的关系"))
    ks.add_page(page("db", "数据库", "存储", "PostgreSQL 是关系型数据库"))
    retriever = MemoryRetriever(store, RetrieverConfig(mode=mode), embedder=embedder)
    result = retriever.retrieve("知识图谱设计")
    assert [i.page.id for i in result.items][:1] == ["kg"]


@pytest.mark.parametrize(
    "mode", [RetrievalMode.BM25, RetrievalMode.HYBRID, RetrievalMode.BM25_EMBEDDINGS]
)
def test_bm25_ranks_the_relevant_page_first(
    store: MemoryBackend, mode: RetrievalMode, embedder: WordLlamaEmbedder
) -> None:
    ks = KnowledgeStore(store)
    ks.add_page(page("rust", "Rust ownership", "borrowing rules", "the borrow checker"))
    ks.add_page(page("py", "Python typing", "gradual types", "mypy checks annotations"))
    ks.add_page(page("go", "Go channels", "concurrency", "goroutines and channels"))
    retriever = MemoryRetriever(store, RetrieverConfig(mode=mode), embedder=embedder)
    result = retriever.retrieve("borrow checker rules")
    assert result.items[0].page.id == "rust"
    assert "go" not in [i.page.id for i in result.items]
    assert all(0.0 <= i.score <= 1.0 for i in result.items)
    # Retrieval counts as a recall of the page.
    item = store.get("knowledge_rust")
    assert item is not None and item.recall_count == 1
