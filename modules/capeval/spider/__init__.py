"""SPIDEr (Liu et al., ICCV 2017): the mean of CIDEr-D and SPICE, as the audio- and image-captioning papers report it.

* :mod:`capeval.spider.metric` — the ``spider`` metric on top of capeval's CIDEr-D and SPICE.
"""
from capeval.spider.metric import Spider, spider_from_parts

__all__ = ["Spider", "spider_from_parts"]
