"""The app's tabs, one Shiny module each (``@module.ui`` / ``@module.server``, with its own
namespace: its inputs are ``<tab>-<name>`` on the page): ``data_tab`` (load a file or a bundled
data set), ``protect_tab`` (the generated controls, Run, Cancel, progress), ``results_tab`` (a
run's figures, report and exports), ``compare_tab`` (the page's runs side by side) and
``explore_tab`` (a grid of k values and methods and its risk-utility map; a run of it opens in
the Results tab). ``shared`` holds the page's state they share (``PageState``) and the helpers
they render with. ``page.build_app`` composes them; a new tab is a module here (``<tab>_tab``)
and one line there.
"""
