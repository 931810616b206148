"""The app's tabs, one Shiny module each (``@module.ui`` / ``@module.server``, with its own
namespace: its inputs are ``<tab>-<name>`` on the page): ``data`` (load a file or a bundled
data set), ``protect`` (the generated controls, Run, Cancel, progress), ``results`` (a run's
figures, report and exports), ``compare`` (the page's runs side by side) and ``explore`` (a
grid of k values and methods and its risk-utility map; a run of it opens in ``results``).
``shared`` holds the page's state they share (``PageState``) and the helpers they render with.
``page.build_app`` composes them; a new tab is a module here and one line there.
"""
