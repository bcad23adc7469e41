"""``kairos ui``: a live terminal view of what kairosd holds (the optional ``ui`` extra, Textual).

:mod:`kairos.ui.views` says what each view shows (pure); :mod:`kairos.ui.app` is the Textual app.
Only ``kairos ui`` imports this package (``kairos.commands.ui``, lazily): a hook call or ``kairos
list`` never loads Textual. May import :mod:`kairos.client`, :mod:`kairos.answers` (each view reads its
answer as its model), :mod:`kairos.output`, :mod:`kairos.timeline` (the Timeline view is the chart
``kairos timeline`` draws) and ``kairosd.core``; not :mod:`kairos.commands` (the verb imports us).
"""
