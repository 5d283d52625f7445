"""Container images of an index: ``bake`` a folder into a verified image, ``inspect`` one.

The Dockerfiles live at the root of a checkout (and in the wheel, see pyproject.toml); the
scripts their stages run live here: ``install-toolkit.sh``, ``prepare_model`` and the runtime
image's ``entrypoint.sh``.
"""
