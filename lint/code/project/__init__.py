"""The project model: what one file needs to know about the rest of its project.

Each Python file gets a small module summary (``summaries``, built with CPython's
``ast``, plain data, cached by content hash); the summaries are linked into a
``ProjectIndex`` (``index``: imports between project files, class hierarchies, fixpoints
for "reaches a collective" and "returns a rank test"), each module's names resolved
into its links, kept between runs so that an edit links again only what it reaches
(``incremental``); each file is then handed the facts about the names it uses, which the
semantic layer asks through ``ProjectView`` (``view``).
"""
