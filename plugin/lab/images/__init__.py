"""The image lab: posts rendered as images (``render``), synthetic photos and the edits a shared
image goes through (``edits``), the character error rate (``cer``), and the measurements built on
them: image posts matched against the text-only run (``posts``) and near-duplicate recall,
false matches and same-image query latency (``dup_bench``). Lab only: serving code never imports
it."""
