"""OpenSearch component templates, index templates and search pipelines, as JSON data.

Read through ``importlib.resources`` (``plugin.index.templates``), so they ship inside the installed
package and never depend on the working directory.
"""
