"""Container images of an index: ``bake`` a folder into a verified image, ``inspect`` one.

The Dockerfiles live at the root of a checkout (and in the wheel); the scripts their stages
run live here.
"""
