"""CAPTURE's stop words: the object names its reference code drops from every scene graph when ``stop_words=True``
(words of the picture itself, "background", "scene", "image", ..., rather than of what it shows).

Copied verbatim, in the reference's order, from ``capture_metric/stop_words.py`` of ``capture-metric`` 0.1.13
(Copyright 2024 CAPTURE project Authors, Apache License 2.0, http://www.apache.org/licenses/LICENSE-2.0);
tests/capture/test_reference.py checks the copy against the wheel.
"""

#: The reference's 317 words in its order (some capitalised or German, as it has them); the metric reads them as a set.
STOP_WORDS: tuple[str, ...] = (
    'background', 'scene', 'object', 'image', 'element', 'text', 'landscape', 'setting', 'space', 'foreground',
    'life', 'backdrop', 'nature', 'design', 'atmosphere', 'surface', 'position', 'structure', 'hue', 'picture',
    'color', 'frame', 'charm', 'area', 'attention', 'presence', 'attire', 'surroundings', 'world', 'distance',
    'location', 'ambiance', 'gaze', 'tone', 'figure', 'field', 'center', 'day', 'air', 'pattern', 'tranquility',
    'view', 'photo', 'story', 'activity', 'expression', 'item', 'time', 'composition', 'viewer', 'environment',
    'horizon', 'moment', 'narrative', 'place', 'spectator', 'architecture', 'texture', 'anticipation', 'content',
    'detail', 'back', 'cityscape', 'motion', 'top', 'comfort', 'display', 'journey', 'description', 'action',
    'Atmosphäre', 'expanse', 'glow', 'adventure', 'individual', 'joy', 'city life', 'interior', 'character', 'night',
    'angle', 'perspective', 'stance', 'history', 'shape', 'energy', 'spirit', 'match', 'movement', 'game', 'exterior',
    'beauty', 'event', 'accent', 'focus', 'bustle', 'touch', 'camaraderie', 'aesthetic', 'vantage point',
    'excitement', 'direction', 'warmth', 'harmony', 'border', 'right', 'terrain', 'mid-air', 'palette', 'message',
    'interaction', 'workspace', 'spectacle', 'base', 'name', 'theme', 'mood', 'solitude', 'left', 'culture',
    'grandeur', 'facade', 'boundary', 'white', 'information', 'illustration', 'row', 'balance', 'creativity',
    'layout', 'style', 'simplicity', 'body language', 'photograph', 'celebration', 'hustle', 'work', 'form', 'court',
    'edge', 'chaos', 'posture', 'elegance', 'handle', 'tableau', 'short', 'clothing', 'context', 'depth', 'uniform',
    'rhythm', 'everyday life', 'experience', 'reflection', 'identity', 'pleasure', 'marvel', 'weather',
    'neighborhood', 'track', 'urban life', 'functionality', 'silhouette', 'aura', 'pose', 'outdoors', 'conversation',
    'imagination', 'surrounding', 'countertop', 'serenity', 'side', 'scenery', 'atmosfere', 'peak', 'traffic',
    'arrangement', 'mystery', 'thrill', 'essence', 'formation', 'skill', 'outline', 'presentation', 'community',
    'darkness', 'demeanor', 'section', 'group', 'positioning', 'scale', 'memory', 'living space', 'front', 'emotion',
    'task', 'travel', 'freedom', 'feature', 'curiosity', 'decor', 'performance', 'dining experience', 'purpose',
    'resilience', 'passion', 'Moment', 'art', 'wilderness', 'effect', 'urban setting', 'power', 'him', 'vibe',
    'placement', 'destination', 'wild', 'vastness', 'determination', 'layer', 'heritage', 'contrast', 'innocence',
    'beauté', 'decoration', 'infrastructure', 'urban', 'ensemble', 'page', 'countryside', 'winter', 'material',
    'intersection', 'subject', 'stillness', 'appeal', 'height', 'play', 'tall', 'modernity', 'connection', 'natural',
    'exploration', 'coexistence', 'bottom', 'tension', 'outdoor', 'Nature', 'natural beauté', 'technology', 'imagery',
    'reality', 'relaxation', 'spot', 'point', 'show', 'significance', 'personality', 'her', 'snapshot', 'viewpoint',
    'entrance', 'rim', 'operation', 'intensity', 'nostalgia', 'afternoon', 'it', 'stride', 'case', 'key', 'component',
    'pant', 'collage', 'speed', 'promise', 'atmosphère', 'vibrancy', 'remote', 'teamwork', 'site', 'turn', 'end',
    'network', 'love', 'flavor', 'strap', 'era', 'marking', 'music', 'confidence', 'knowledge', 'appearance',
    'condition', 'routine', 'team', 'role', 'unity', 'bloom', 'ecosystem', 'topping', 'enclosure', 'order', 'step',
    'flight', 'ingredient', 'diversity', 'tip', 'universe', 'breakfast', 'middle', 'treat', 'companionship',
    'essential', 'red', 'symbolism', 'interpretation',
)
